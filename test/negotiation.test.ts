import { describe, expect, it } from "vitest";
import {
  ATOMIC,
  ATOMIC_MEDIA_TYPE,
  as,
  JSONAPI,
  newFeed,
  ORIGIN,
  send,
  subscriptionDocument,
  tokenFor,
} from "./helpers";

const LINK_METHOD = `${ORIGIN}/ext/link-method`;

async function postSubscription(contentType: string | undefined, accept?: string) {
  const feed = newFeed();
  const headers: Record<string, string> = { Authorization: `Bearer ${await tokenFor("negotiation")}` };
  if (contentType !== undefined) headers["Content-Type"] = contentType;
  if (accept !== undefined) headers.Accept = accept;
  return send(
    new Request(`${ORIGIN}/v1/subscriptions`, {
      method: "POST",
      headers,
      body: JSON.stringify(subscriptionDocument(feed.guid, feed.feedUrl)),
    }),
  );
}

async function getList(accept: string | undefined) {
  const headers: Record<string, string> = { Authorization: `Bearer ${await tokenFor("negotiation")}` };
  if (accept !== undefined) headers.Accept = accept;
  return send(new Request(`${ORIGIN}/v1/subscriptions`, { headers }));
}

async function postOperations(contentType: string, accept?: string) {
  const feed = newFeed();
  const headers: Record<string, string> = {
    Authorization: `Bearer ${await tokenFor("negotiation")}`,
    "Content-Type": contentType,
  };
  if (accept !== undefined) headers.Accept = accept;
  return send(
    new Request(`${ORIGIN}/v1/operations`, {
      method: "POST",
      headers,
      body: JSON.stringify({ "atomic:operations": [{ op: "add", ...subscriptionDocument(feed.guid, feed.feedUrl) }] }),
    }),
  );
}

async function expectError(response: Response, status: number) {
  expect(response.status).toBe(status);
  expect(response.headers.get("Content-Type")).toBe(JSONAPI);
  const body = (await response.json()) as { errors: { status: string }[] };
  expect(body.errors[0].status).toBe(String(status));
}

describe("request Content-Type (415)", () => {
  const refused: [string, string | undefined][] = [
    ["no Content-Type", undefined],
    ["application/json", "application/json"],
    ["text/plain", "text/plain"],
    ["a charset parameter", `${JSONAPI}; charset=utf-8`],
    ["an unknown parameter", `${JSONAPI};version=1`],
    ["an unsupported extension", `${JSONAPI};ext="https://example.com/ext/other"`],
    ["the atomic extension (bulk only)", `${JSONAPI};ext="${ATOMIC}"`],
    ["a malformed media type", "vnd.api+json"],
  ];
  for (const [name, contentType] of refused) {
    it(`refuses ${name} on POST /v1/subscriptions`, async () => {
      await expectError(await postSubscription(contentType), 415);
    });
  }

  const accepted: [string, string][] = [
    ["the plain JSON:API type", JSONAPI],
    ["any case and spaces around ; and =", 'Application/Vnd.Api+JSON ;  Profile = "https://example.com/p"'],
    ["an unknown profile (ignored)", `${JSONAPI};profile="https://example.com/profiles/unknown"`],
    ["the link-method extension", `${JSONAPI};ext="${LINK_METHOD}"`],
  ];
  for (const [name, contentType] of accepted) {
    it(`accepts ${name} on POST /v1/subscriptions`, async () => {
      expect((await postSubscription(contentType)).status).toBe(201);
    });
  }

  it("refuses a body without the atomic extension on /v1/operations", async () => {
    await expectError(await postOperations(JSONAPI, ATOMIC_MEDIA_TYPE), 415);
    await expectError(await postOperations("application/json", ATOMIC_MEDIA_TYPE), 415);
    await expectError(await postOperations(`${ATOMIC_MEDIA_TYPE};charset=utf-8`, ATOMIC_MEDIA_TYPE), 415);
    await expectError(
      await postOperations(`${JSONAPI};ext="${ATOMIC} https://example.com/ext/x"`, ATOMIC_MEDIA_TYPE),
      415,
    );
  });

  it("accepts the atomic extension alone or with link-method, in one quoted value", async () => {
    expect((await postOperations(ATOMIC_MEDIA_TYPE, ATOMIC_MEDIA_TYPE)).status).toBe(200);
    expect((await postOperations(`${JSONAPI}; ext="${LINK_METHOD} ${ATOMIC}"`, ATOMIC_MEDIA_TYPE)).status).toBe(200);
  });
});

describe("Accept (406)", () => {
  const fine = [
    undefined,
    "*/*",
    "application/*",
    "application/json",
    JSONAPI,
    "text/html",
    `${JSONAPI};q=0.9`,
    `${JSONAPI};charset=utf-8, ${JSONAPI}`,
    `${JSONAPI};profile="https://example.com/p"`,
    `${JSONAPI};ext="${ATOMIC}"`,
    `${JSONAPI};ext="${LINK_METHOD}"`,
  ];
  for (const accept of fine) {
    it(`serves GET /v1/subscriptions with Accept ${accept ?? "(absent)"}`, async () => {
      const response = await getList(accept);
      expect(response.status).toBe(200);
      expect(response.headers.get("Content-Type")).toBe(JSONAPI);
    });
  }

  const refused = [
    `${JSONAPI};charset=utf-8`,
    `${JSONAPI};ext="https://example.com/ext/unknown"`,
    `${JSONAPI};charset=utf-8, ${JSONAPI};ext="https://example.com/ext/unknown"`,
    `text/html, ${JSONAPI};foo=bar`,
  ];
  for (const accept of refused) {
    it(`answers 406 for Accept ${accept}`, async () => {
      await expectError(await getList(accept), 406);
    });
  }

  it("applies to POST too", async () => {
    await expectError(await postSubscription(JSONAPI, `${JSONAPI};charset=utf-8`), 406);
  });

  it("on /v1/operations, needs an instance that allows the atomic extension unless a wildcard is there", async () => {
    await expectError(await postOperations(ATOMIC_MEDIA_TYPE, JSONAPI), 406);
    await expectError(await postOperations(ATOMIC_MEDIA_TYPE, `${JSONAPI}, application/json`), 406);
    expect((await postOperations(ATOMIC_MEDIA_TYPE, `${JSONAPI}, */*`)).status).toBe(200);
    expect((await postOperations(ATOMIC_MEDIA_TYPE, `${JSONAPI}, application/*`)).status).toBe(200);
    expect((await postOperations(ATOMIC_MEDIA_TYPE)).status).toBe(200);
    expect((await postOperations(ATOMIC_MEDIA_TYPE, "application/json")).status).toBe(200);
  });
});

describe("response media type and headers", () => {
  it("names the atomic extension on bulk responses, and link-method too when Accept asked for it", async () => {
    const plain = await postOperations(ATOMIC_MEDIA_TYPE, ATOMIC_MEDIA_TYPE);
    expect(plain.headers.get("Content-Type")).toBe(`${JSONAPI};ext="${ATOMIC}"`);
    const both = await postOperations(ATOMIC_MEDIA_TYPE, `${JSONAPI};ext="${ATOMIC} ${LINK_METHOD}"`);
    expect(both.headers.get("Content-Type")).toBe(`${JSONAPI};ext="${ATOMIC} ${LINK_METHOD}"`);
    const separate = await postOperations(
      ATOMIC_MEDIA_TYPE,
      `${JSONAPI};ext="${ATOMIC}", ${JSONAPI};ext="${LINK_METHOD}"`,
    );
    expect(separate.headers.get("Content-Type")).toBe(`${JSONAPI};ext="${ATOMIC} ${LINK_METHOD}"`);
  });

  it("uses PUBLIC_BASE_URL for the link-method URI when it is set", async () => {
    const feed = newFeed();
    const base = "https://podcasts.example.org";
    const response = await send(
      new Request(`${ORIGIN}/v1/operations`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${await tokenFor("negotiation")}`,
          "Content-Type": ATOMIC_MEDIA_TYPE,
          Accept: `${JSONAPI};ext="${ATOMIC} ${base}/ext/link-method"`,
        },
        body: JSON.stringify({
          "atomic:operations": [{ op: "add", ...subscriptionDocument(feed.guid, feed.feedUrl) }],
        }),
      }),
      { PUBLIC_BASE_URL: `${base}/` },
    );
    expect(response.headers.get("Content-Type")).toBe(`${JSONAPI};ext="${ATOMIC} ${base}/ext/link-method"`);
    const body = (await response.json()) as { jsonapi: { ext: string[] } };
    expect(body.jsonapi.ext).toEqual([ATOMIC, `${base}/ext/link-method`]);
  });

  it("sends Vary: Accept and X-Request-Id on every response, errors included", async () => {
    const user = await as("negotiation");
    const responses = [
      await user.get("/v1/subscriptions"),
      await user.get(`/v1/subscriptions/${crypto.randomUUID()}`),
      await send(new Request(`${ORIGIN}/v1/subscriptions`)),
      await send(new Request(`${ORIGIN}/nowhere`)),
      await postSubscription("text/plain"),
      await send(new Request(`${ORIGIN}/ext/link-method`)),
    ];
    for (const response of responses) {
      expect(response.headers.get("Vary")).toContain("Accept");
      expect(response.headers.get("X-Request-Id")).toMatch(/^[\w-]+$/);
    }
  });

  it("keeps a well-formed X-Request-Id sent by the client, and replaces a hostile one", async () => {
    const kept = await send(new Request(`${ORIGIN}/nowhere`, { headers: { "X-Request-Id": "trace-123" } }));
    expect(kept.headers.get("X-Request-Id")).toBe("trace-123");
    const replaced = await send(new Request(`${ORIGIN}/nowhere`, { headers: { "X-Request-Id": 'a b"<script>' } }));
    expect(replaced.headers.get("X-Request-Id")).not.toContain("script");
  });
});

describe("GET /ext/link-method", () => {
  it("describes the extension in plain text at its own URI", async () => {
    const response = await send(new Request(`${ORIGIN}/ext/link-method`));
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain(LINK_METHOD);
    expect(text).toContain('"method": "DELETE"');
  });
});
