// A shop's whole integration, typed only by what openapi-typescript generated from the served
// /openapi.json (./generated/api.d.ts) and called through openapi-fetch: no hand-written API
// types and no casts (tests/e2e/test_typescript_client.py checks both, then runs it).
// Environment: SVC_BASE_URL, SVC_SECRET_KEY, SVC_RECEIVER_URL (an https webhook receiver).
import { randomUUID } from "node:crypto";
import createClient from "openapi-fetch";
import type { paths } from "./generated/api.js";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`check failed: ${what}`);
}

// openapi-fetch answers {data} on a 2xx and {error} otherwise.
function ok<T>(result: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (result.data === undefined) {
    throw new Error(`${what}: ${result.response.status} ${JSON.stringify(result.error)}`);
  }
  return result.data;
}

const api = createClient<paths>({
  baseUrl: env("SVC_BASE_URL"),
  headers: { Authorization: `Bearer ${env("SVC_SECRET_KEY")}` },
});
const key = () => ({ header: { "Idempotency-Key": randomUUID() } });
const seen: string[] = [];

// Token and an automatic payment.
const token = ok(
  await api.POST("/v1/sandbox/tokens", {
    body: { number: "4242424242424242", exp_month: 12, exp_year: 2099, cvc: "123" },
  }),
  "token",
);
check(token.card.last4 === "4242", "token card");
const automatic = ok(
  await api.POST("/v1/payments", {
    params: key(),
    body: {
      amount: 2500,
      currency: "eur",
      reference: "ts-order-1",
      payment_method: { type: "card", token: token.id },
      metadata: { order_id: "1", gift: false },
    },
  }),
  "automatic payment",
);
check(automatic.status === "captured", "captured at once");
check(automatic.outcome.decline_is_soft === null, "an approval has no decline_is_soft");
check(automatic.outcome.risk_score !== null && automatic.outcome.risk_score < 100, "risk");
check(automatic.method.card?.last4 === "4242", "method.card");
check(automatic.fees?.breakdown.mdr !== undefined, "fees are snapshotted at capture");
seen.push(`automatic ${automatic.id} ${automatic.status} fees=${automatic.fees?.amount}`);

// A manual payment, captured in part, then refunded in part.
const manualToken = ok(
  await api.POST("/v1/sandbox/tokens", {
    body: { number: "4242424242424242", exp_month: 12, exp_year: 2099, cvc: "123" },
  }),
  "token",
);
const manual = ok(
  await api.POST("/v1/payments", {
    params: key(),
    body: {
      amount: 4000,
      currency: "eur",
      reference: "ts-order-2",
      capture_method: "manual",
      payment_method: { type: "card", token: manualToken.id },
    },
  }),
  "manual payment",
);
check(manual.status === "authorized" && manual.fees === null, "authorized, no fees yet");
const captured = ok(
  await api.POST("/v1/payments/{payment_id}/captures", {
    params: { path: { payment_id: manual.id }, ...key() },
    body: { amount: 2000 },
  }),
  "partial capture",
);
check(captured.amount_captured === 2000 && captured.amount === 4000, "partial capture");
const refund = ok(
  await api.POST("/v1/payments/{payment_id}/refunds", {
    params: { path: { payment_id: manual.id }, ...key() },
    body: { amount: 500, reason: "requested_by_customer" },
  }),
  "refund",
);
check(refund.payment === manual.id && refund.amount === 500, "refund");
const refundRead = ok(
  await api.GET("/v1/refunds/{refund_id}", { params: { path: { refund_id: refund.id } } }),
  "refund read",
);
check(refundRead.status === refund.status && (refundRead.fee?.amount ?? 0) >= 0, "refund read");
seen.push(`manual ${manual.id} captured ${captured.amount_captured}, refund ${refund.status}`);

// Filtered and paged lists: typed filters (an integer amount, a time in unix seconds).
const since = Math.floor(Date.parse(automatic.created) / 1000) - 60;
const query = { "amount[gte]": 2000, "created[gte]": since, currency: "eur", limit: 1 };
const first = ok(await api.GET("/v1/payments", { params: { query } }), "list");
check(first.data.length === 1 && first.has_more && first.next_cursor !== null, "first page");
const second = ok(
  await api.GET("/v1/payments", {
    params: { query: { ...query, starting_after: first.next_cursor ?? undefined } },
  }),
  "second page",
);
const listed = [...first.data, ...second.data].map((payment) => payment.id).sort();
check(JSON.stringify(listed) === JSON.stringify([automatic.id, manual.id].sort()), "pages");
seen.push(`listed ${listed.length} payments over 2 pages`);

// A webhook endpoint, and a simulated webhook delivered to it.
const endpoint = ok(
  await api.POST("/v1/webhook-endpoints", {
    params: key(),
    body: { url: env("SVC_RECEIVER_URL"), enabled_events: ["payment.*", "refund.*"] },
  }),
  "webhook endpoint",
);
check(endpoint.secret.includes("_whsec_") && endpoint.status === "enabled", "endpoint secret");
const simulated = ok(
  await api.POST("/v1/sandbox/simulate-webhook", {
    params: key(),
    body: { type: "payment.captured", endpoint: endpoint.id, resource: automatic.id },
  }),
  "simulate-webhook",
);
check(simulated.attempts[0]?.status === "delivered", "delivered to the receiver");
check(simulated.attempts[0]?.http_status === 200, "the receiver answered 200");
const simulatedObject = simulated.data.object;
check(simulatedObject.object === "payment" && simulatedObject.id === automatic.id, "object");
seen.push(`webhook ${simulated.type} -> ${simulated.attempts[0]?.http_status}`);

// Events: the handler branches on `type`, and data.object is then a Payment or a Refund.
const events = ok(await api.GET("/v1/events", { params: { query: { limit: 100 } } }), "events");
let paymentEvents = 0;
let refundEvents = 0;
for (const event of events.data) {
  if (event.type === "payment.captured" || event.type === "payment.partially_captured") {
    paymentEvents += 1;
    check(event.data.object.amount_captured > 0, "a captured payment has an amount");
    check(event.data.object.outcome.response_code === "00", "approved");
    check(event.data.previous_attributes.status !== "captured", "status changed");
  } else if (event.type === "refund.created" || event.type === "refund.succeeded") {
    refundEvents += 1;
    check(event.data.object.payment === manual.id, "a refund of the manual payment");
  }
}
check(paymentEvents >= 2 && refundEvents >= 1, "payment and refund events");
const detail = ok(
  await api.GET("/v1/events/{event_id}", { params: { path: { event_id: simulated.id } } }),
  "event",
);
check(detail.attempts.length === 1 && detail.attempts[0]?.endpoint === endpoint.id, "attempts");
seen.push(`events: ${paymentEvents} payment, ${refundEvents} refund`);

// The event feed, followed by its cursors until it holds every event listed (it shows an
// event once the older transactions of the server, other sessions' too, have ended).
const fed = new Set<string>();
let after: string | undefined;
while (!events.data.every((event) => fed.has(event.id))) {
  const page = ok(
    await api.GET("/v1/events/feed", { params: { query: { after, limit: 100, wait: 1 } } }),
    "feed",
  );
  for (const entry of page.data) {
    check(entry.object === "feed_entry" && entry.event.object === "event", "a feed entry");
    fed.add(entry.event.id);
  }
  after = page.next_cursor;
}
seen.push(`feed: ${fed.size} events`);

// A decline: 402 and the error envelope, its decline code and the declined payment's id typed.
const declinedToken = ok(
  await api.POST("/v1/sandbox/tokens", {
    body: { number: "4000000000000002", exp_month: 12, exp_year: 2099, cvc: "123" },
  }),
  "declined token",
);
const declined = await api.POST("/v1/payments", {
  params: key(),
  body: {
    amount: 1000,
    currency: "eur",
    reference: "ts-order-3",
    payment_method: { type: "card", token: declinedToken.id },
  },
});
check(declined.response.status === 402, "a decline is 402");
check(declined.error?.error.type === "card_error", "card_error");
check(declined.error?.error.decline_code === "generic_decline", "decline_code");
check(declined.error?.error.payment?.startsWith("pay_") === true, "the declined payment's id");
seen.push(`decline ${declined.response.status} ${declined.error?.error.payment}`);

// A sandbox 5xx: the envelope, api_error, safe to retry with the same key.
const failingToken = ok(
  await api.POST("/v1/sandbox/tokens", {
    body: { number: "4242424242424242", exp_month: 12, exp_year: 2099, cvc: "123" },
  }),
  "token",
);
const sameKey = key();
const failing = {
  amount: 1000,
  currency: "eur",
  reference: "ts-order-4",
  payment_method: { type: "card", token: failingToken.id },
  metadata: { _svc_test_http_error: 503 },
};
const unavailable = await api.POST("/v1/payments", { params: sameKey, body: failing });
check(unavailable.response.status === 503, "the sandbox's 503");
check(unavailable.error?.error.type === "api_error", "api_error");
const retried = await api.POST("/v1/payments", { params: sameKey, body: failing });
check(retried.response.status === 503, "a 5xx is not replayed: the retry runs again");
seen.push(`5xx ${unavailable.response.status} ${unavailable.error?.error.code}`);

console.log(JSON.stringify({ ok: true, seen }));
