"""/openapi.json, /openapi.yaml and /docs/ cost nothing to ask for (issue 35 item 1): the
description is generated once per process, then served as the same bytes, whatever the client
sends in Accept (docs/openapi.md "Served")."""

import json

import pytest
import yaml
from drf_spectacular.generators import SchemaGenerator

from config import openapi

DOCUMENTS = ["/openapi.json", "/openapi.yaml"]


@pytest.fixture
def generations(monkeypatch) -> list:
    """Each call of drf-spectacular's generator, counted, from an empty cache."""
    calls = []
    get_schema = SchemaGenerator.get_schema

    def counted(self, *args, **kwargs):
        calls.append(1)
        return get_schema(self, *args, **kwargs)

    monkeypatch.setattr(SchemaGenerator, "get_schema", counted)
    openapi.forget()
    yield calls
    openapi.forget()


def test_the_description_is_generated_once_per_process(client, generations):
    answers = [client.get(path) for path in DOCUMENTS * 5]
    assert {answer.status_code for answer in answers} == {200}
    assert len(generations) == 1
    assert json.loads(answers[0].content) == yaml.safe_load(answers[1].content)


def test_a_cached_answer_is_the_same_bytes_never_rendered_again(client, generations):
    # What makes it cheap, asserted without a clock (speed is measured in benchmarks): after
    # the first answer no request generates or renders the description again.
    first = client.get("/openapi.json").content
    openapi._schema.cache_clear()  # a request that built anything would now call the generator
    answers = [client.get("/openapi.json").content for _ in range(5)]
    assert answers == [first] * 5
    assert len(generations) == 1


@pytest.mark.parametrize("path", DOCUMENTS)
def test_an_etag_lets_a_client_revalidate_for_nothing(client, path):
    first = client.get(path)
    assert first["ETag"] and "max-age" in first["Cache-Control"]
    again = client.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
    assert (again.status_code, again.content) == (304, b"")


@pytest.mark.parametrize("path", [*DOCUMENTS, "/docs/"])
@pytest.mark.parametrize("accept", ["application/xml", "text/csv", "nonsense", "*/*"])
def test_any_accept_gets_the_document_never_a_500(client, path, accept):
    client.raise_request_exception = False
    answer = client.get(path, HTTP_ACCEPT=accept)
    assert answer.status_code == 200, answer.content[:300]
    assert answer.content == client.get(path).content
