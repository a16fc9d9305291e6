import { env } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { parseOpml } from "../src/opml/parse";
import { ATOMIC, JSONAPI, ORIGIN, send, tokenFor } from "./helpers";

/** Fixed so that CI runs are reproducible (change it to explore). fast-check prints the seed and path on failure. */
const SEED = 20261121;
const RUNS = 2000;
const USER = "fuzz-user";

async function snapshot(): Promise<string> {
  const rows = await env.DB.batch([
    env.DB.prepare("SELECT * FROM subscriptions WHERE user_id = ? ORDER BY guid").bind(USER),
    env.DB.prepare("SELECT * FROM user_stats WHERE user_id = ?").bind(USER),
  ]);
  return JSON.stringify(rows.map((result) => result.results));
}

const knownGuid = "6f1e4c2a-1111-4222-8333-944445555666";
const guid = fc.oneof(fc.uuid(), fc.constant(knownGuid), fc.string({ maxLength: 40 }));
const feedUrl = fc.oneof(fc.webUrl(), fc.string({ maxLength: 60 }), fc.constant("https://feeds.example.com/x.xml"));
const resource = fc.record(
  {
    type: fc.oneof(fc.constant("subscription"), fc.string({ maxLength: 12 }), fc.integer()),
    id: fc.oneof(guid, fc.integer(), fc.constant(null)),
    attributes: fc.oneof(
      fc.record({ feedUrl: fc.oneof(feedUrl, fc.integer(), fc.constant(null)) }, { requiredKeys: [] }),
      fc.anything(),
    ),
  },
  { requiredKeys: [] },
);
const jsonBody = fc.oneof(
  fc.record({ data: fc.oneof(resource, fc.anything()) }, { requiredKeys: [] }).map((value) => JSON.stringify(value)),
  fc
    .record({
      "atomic:operations": fc.oneof(
        fc.array(
          fc.oneof(
            fc.record(
              { op: fc.oneof(fc.constantFrom("add", "update", "remove", "nope"), fc.anything()), data: resource },
              { requiredKeys: [] },
            ),
            fc.anything(),
          ),
          { maxLength: 8 },
        ),
        fc.anything(),
      ),
    })
    .map((value) => JSON.stringify(value)),
  fc.json(),
);
const body = fc.oneof(jsonBody, fc.string({ maxLength: 200 }), fc.constant(undefined));

const mediaType = fc.oneof(
  fc.constantFrom(
    JSONAPI,
    `${JSONAPI};ext="${ATOMIC}"`,
    `${JSONAPI}; ext="${ATOMIC} ${ORIGIN}/ext/link-method"`,
    `${JSONAPI};charset=utf-8`,
    `${JSONAPI};ext=${ATOMIC}`,
    `${JSONAPI};profile="x";ext="y"`,
    "application/json",
    "*/*",
    "text/plain",
    `${JSONAPI};ext="`,
    "",
  ),
  fc.string({ maxLength: 60 }),
);

const path = fc.oneof(
  fc.constantFrom("/v1/subscriptions", "/v1/operations", "/ext/link-method", "/", "/v1", "/v1/subscriptions/"),
  guid.map((value) => `/v1/subscriptions/${encodeURIComponent(value)}`),
  fc.string({ maxLength: 30 }).map((value) => `/v1/subscriptions/${value.replace(/[?#]/g, "")}`),
);
const queryPart = fc.oneof(
  fc.constantFrom(
    "page[number]",
    "page[size]",
    "include",
    "sort",
    "fields[subscription]",
    "filter[x]",
    "fooBar",
    "page%5Bsize%5D",
    "%ZZ",
  ),
  fc.string({ maxLength: 10 }),
);
const query = fc
  .array(fc.tuple(queryPart, fc.oneof(fc.integer({ min: -5, max: 200 }).map(String), fc.string({ maxLength: 8 }))), {
    maxLength: 3,
  })
  .map((pairs) => (pairs.length === 0 ? "" : `?${pairs.map(([k, v]) => `${k}=${v.replace(/[#&]/g, "")}`).join("&")}`));

const authorization = fc.oneof(
  fc.constant("valid"),
  fc.constant("expired"),
  fc.constant(undefined),
  fc.string({ maxLength: 40 }).map((value) => `Bearer ${value}`),
  fc.string({ maxLength: 40 }),
);

const request = fc.record({
  method: fc.constantFrom("GET", "POST", "DELETE", "PUT", "PATCH", "HEAD"),
  path,
  query,
  contentType: fc.option(mediaType, { nil: undefined }),
  accept: fc.option(mediaType, { nil: undefined }),
  ifNoneMatch: fc.option(fc.oneof(fc.constant("*"), fc.string({ maxLength: 20 })), { nil: undefined }),
  authorization,
  body,
});

describe("property: generated requests", () => {
  it(`never answer 5xx, always answer errors as JSON:API, and change nothing when refused (${RUNS} requests)`, async () => {
    const valid = await tokenFor(USER);
    const expired = await tokenFor(USER, { exp: Math.floor(Date.now() / 1000) - 60 });
    const seed = SEED;
    vi.spyOn(console, "log").mockImplementation(() => {}); // 2 000 request log lines say nothing here
    await fc.assert(
      fc.asyncProperty(request, async (generated) => {
        const headers = new Headers();
        const auth =
          generated.authorization === "valid"
            ? `Bearer ${valid}`
            : generated.authorization === "expired"
              ? `Bearer ${expired}`
              : generated.authorization;
        const safe = (value: string) => value.replace(/[\r\n\0]/g, "");
        if (auth !== undefined) headers.set("Authorization", safe(auth));
        if (generated.contentType !== undefined) headers.set("Content-Type", safe(generated.contentType));
        if (generated.accept !== undefined) headers.set("Accept", safe(generated.accept));
        if (generated.ifNoneMatch !== undefined) headers.set("If-None-Match", safe(generated.ifNoneMatch));
        const hasBody = generated.body !== undefined && generated.method !== "GET" && generated.method !== "HEAD";
        let url: URL;
        try {
          url = new URL(`${ORIGIN}${generated.path}${generated.query}`);
        } catch {
          return; // not a URL a client could send
        }
        const before = await snapshot();
        const response = await send(
          new Request(url, { method: generated.method, headers, body: hasBody ? generated.body : undefined }),
        );
        const text = await response.text();
        expect(response.status).toBeLessThan(500);
        if (response.status >= 400) {
          expect(response.headers.get("Content-Type")).toBe(JSONAPI);
          if (generated.method !== "HEAD") {
            const document = JSON.parse(text) as { errors: { status: string; title: string; detail: string }[] };
            expect(document.errors.length).toBeGreaterThan(0);
            for (const error of document.errors) {
              expect(error.status).toBe(String(response.status));
              expect(typeof error.title).toBe("string");
              expect(typeof error.detail).toBe("string");
            }
          }
          expect(await snapshot()).toBe(before);
        }
      }),
      { numRuns: RUNS, seed, endOnFailure: true },
    );
    vi.restoreAllMocks();
  }, 240_000);
});

// ---------------------------------------------------------------------------------------------
// OPML imports: documents assembled from the pieces real and hostile files are made of.

const xmlText = (value: string) => value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
const rarely = <T>(arbitrary: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, { arbitrary, weight: 1 });
const prolog = fc.constantFrom(
  "",
  '<?xml version="1.0" encoding="UTF-8"?>\n',
  "<?xml version='1.0' encoding='utf8'?>\r\n",
  '<?xml version="1.0"?>',
  '\uFEFF<?xml version="1.0"?>',
  '<?xml version="1.0" encoding="ISO-8859-1"?>',
  "<!DOCTYPE opml>",
  '<!DOCTYPE opml [<!ENTITY a "&b;&b;"><!ENTITY b "bbbb">]>',
  '<!DOCTYPE opml [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
);
const outlineElement = fc
  .record({ url: feedUrl, guid: fc.option(guid, { nil: undefined }), text: fc.string({ maxLength: 12 }) })
  .map(
    ({ url, guid: id, text }) =>
      `<outline type="rss" text="${xmlText(text)}" xmlUrl="${xmlText(url)}"${id === undefined ? "" : ` guid="${xmlText(id)}"`}/>`,
  );
const bodyPiece = fc.oneof(
  outlineElement,
  fc.array(outlineElement, { maxLength: 3 }).map((inner) => `<outline text="folder">${inner.join("")}</outline>`),
  fc.string({ maxLength: 20 }).map((text) => `<outline text="notes"><![CDATA[${text.replace(/]]>/g, "")}]]></outline>`),
  fc.string({ maxLength: 20 }).map(xmlText),
  fc.constantFrom("<!-- a comment -->", "\r\n", "\t"),
);
const hostilePiece = fc.oneof(
  fc.constantFrom("&a;", "<rss>", "</body>", "<!ENTITY x 'y'>", '<outline xmlUrl="a&b"/>', "<"),
  fc.string({ maxLength: 20 }),
);
const opmlBody = fc.record({
  prolog,
  root: fc.constantFrom("opml", "opml", "opml", "rss"),
  pieces: fc.array(bodyPiece, { maxLength: 12 }),
  hostile: rarely(hostilePiece),
  invalidByteAt: rarely(fc.nat()),
});

describe("property: generated OPML imports", () => {
  it("never answer 5xx; a refusal is a JSON:API error that changes nothing; an import's counts add up (500 documents)", async () => {
    const token = await tokenFor(USER);
    vi.spyOn(console, "log").mockImplementation(() => {});
    await fc.assert(
      fc.asyncProperty(opmlBody, async ({ prolog, root, pieces, hostile, invalidByteAt }) => {
        const head = `${prolog}<${root} version="2.0"><head><title>t</title></head><body>`;
        const text = `${head}${pieces.join("")}${hostile ?? ""}</body></${root}>`;
        let bytes = new TextEncoder().encode(text);
        if (invalidByteAt !== undefined) {
          const at = invalidByteAt % (bytes.length + 1);
          bytes = new Uint8Array([...bytes.slice(0, at), 0xc3, 0x28, ...bytes.slice(at)]);
        }
        const before = await snapshot();
        const response = await send(
          new Request(`${ORIGIN}/v1/subscriptions.opml`, {
            method: "POST",
            headers: { Authorization: `Bearer ${token}`, "Content-Type": "text/x-opml" },
            body: bytes,
          }),
        );
        expect(response.status).toBeLessThan(500);
        expect(response.headers.get("Content-Type")).toBe(JSONAPI);
        const document = (await response.json()) as {
          errors?: { status: string; title: string; detail: string }[];
          meta?: { imported: number; alreadySubscribed: number; skipped: unknown[] };
        };
        if (response.status !== 200) {
          expect(document.errors?.[0].status).toBe(String(response.status));
          expect(await snapshot()).toBe(before);
          return;
        }
        const feeds = parseOpml(bytes.buffer as ArrayBuffer).length;
        const { imported, alreadySubscribed, skipped } = document.meta as NonNullable<typeof document.meta>;
        expect(imported + alreadySubscribed + skipped.length).toBe(feeds);
        if (imported === 0) expect(await snapshot()).toBe(before);
      }),
      { numRuns: 500, seed: SEED, endOnFailure: true },
    );
    vi.restoreAllMocks();
  }, 240_000);
});
