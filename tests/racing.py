"""Real parallel HTTP requests against a live server (each on its own database connection),
for the race tests of every money-moving action."""

import threading

import requests

CARD = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2099, "cvc": "123"}


class Api:
    def __init__(self, base: str, key: str):
        self.base, self.headers = base, {"Authorization": f"Bearer {key}"}

    def post(self, path: str, body: dict | None = None) -> requests.Response:
        return requests.post(self.base + path, json=body or {}, headers=self.headers, timeout=30)

    def get(self, path: str) -> requests.Response:
        return requests.get(self.base + path, headers=self.headers, timeout=30)

    def token(self, number: str = "4242424242424242") -> str:
        return self.post("/v1/sandbox/tokens", {**CARD, "number": number}).json()["id"]

    def payment(self, number: str | None, **fields) -> dict:
        """A payment paid with a fresh token for `number` (None: pending, no token)."""
        body = {"amount": 1000, "currency": "eur", "reference": "race", **fields}
        body["payment_method"] = {"type": "card"}
        if number is not None:
            body["payment_method"]["token"] = self.token(number)
        response = self.post("/v1/payments", body)
        assert response.status_code == 201, response.content
        return response.json()


def race(
    http: Api, paths: list[str], body: dict | None = None
) -> list[tuple[str, int, str | None]]:
    """POST every path (each with `body`) at once; see race_each."""
    return race_each(http, [(path, body) for path in paths])


def race_each(
    http: Api, requests_: list[tuple[str, dict | None]]
) -> list[tuple[str, int, str | None]]:
    """POST every (path, body) at once: a barrier releases all threads together.
    -> (last path segment, HTTP status, error code or None) per request."""
    barrier, results = threading.Barrier(len(requests_)), []

    def hit(path, body):
        barrier.wait()
        response = http.post(path, body)
        error = response.json().get("error", {})
        results.append((path.rsplit("/", 1)[-1], response.status_code, error.get("code")))

    threads = [threading.Thread(target=hit, args=request) for request in requests_]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
