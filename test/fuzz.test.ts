import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { parseOpml } from "../src/opml/parse";
import { ATOMIC, databaseFor, JSONAPI, ORIGIN, send, tokenFor } from "./helpers";
import { propertyOptions, propertyTimeout } from "./property-options";

/**
 * Fixed so that CI runs are reproducible (PROPERTY_SEED and PROPERTY_RUNS_SCALE change them: property-options.ts).
 * fast-check prints the seed and path on failure.
 */
const REQUESTS = propertyOptions(20261121, 1000);
const OPML_DOCUMENTS = propertyOptions(20261121, 300);
const USER = "fuzz-user";

async function snapshot(): Promise<string> {
  const db = await databaseFor(USER);
  const rows = await db.batch([
    db.prepare("SELECT * FROM subscriptions WHERE user_id = ? ORDER BY guid").bind(USER),
    db.prepare("SELECT * FROM user_stats WHERE user_id = ?").bind(USER),
  ]);
  return JSON.stringify(rows.map((result) => result.results));
}

const knownGuid = "6f1e4c2a-1111-4222-8333-944445555666";
const guid = fc.oneof(fc.uuid(), fc.constant(knownGuid), fc.string({ maxLength: 40 }));
const feedUrl = fc.oneof(
  fc.webUrl(),
  fc.string({ maxLength: 60 }),
  fc.constant("https://feeds.example.com/x.xml"),
  // Any code point, controls, bidi marks and lone surrogates included, and lengths around the 2048-byte limit.
  fc.string({ unit: "binary", maxLength: 30 }).map((tail) => `https://feeds.example.com/${tail}`),
  fc
    .tuple(fc.constantFrom("a", "é", "フ", "😀"), fc.integer({ min: 500, max: 2100 }))
    .map(([unit, count]) => `https://feeds.example.com/${unit.repeat(count)}`.slice(0, 2100)),
);
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
              {
                op: fc.oneof(fc.constantFrom("add", "update", "remove", "nope"), fc.anything()),
                data: fc.oneof(resource, fc.anything()),
                ref: fc.oneof(
                  fc.record(
                    { type: fc.oneof(fc.constant("subscription"), fc.anything()), id: guid },
                    { requiredKeys: [] },
                  ),
                  fc.anything(),
                ),
                href: fc.string({ maxLength: 20 }),
              },
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
/** Bytes that are not UTF-8 (a stray 0xFF, an overlong or truncated sequence) spliced into a JSON body. */
const notUtf8Of = (json: string) =>
  fc
    .tuple(fc.constantFrom([0xff], [0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe3, 0x83]), fc.nat())
    .map(([bytes, at]) => {
      const encoded = new TextEncoder().encode(json);
      const cut = at % (encoded.length + 1);
      return new Uint8Array([...encoded.slice(0, cut), ...bytes, ...encoded.slice(cut)]);
    });
const notUtf8 = jsonBody.chain(notUtf8Of);
const body = fc.oneof(jsonBody, notUtf8, fc.string({ maxLength: 200 }), fc.constant(undefined));

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
  // Not "/": the home page is HTML (docs/API.md §16), no part of the API this property is about.
  fc.constantFrom("/v1/subscriptions", "/v1/operations", "/ext/link-method", "/v1/", "/v1", "/v1/subscriptions/"),
  guid.map((value) => `/v1/subscriptions/${encodeURIComponent(value)}`),
  fc.string({ maxLength: 30 }).map((value) => `/v1/subscriptions/${value.replace(/[?#]/g, "")}`),
);
const queryPart = fc.oneof(
  fc.constantFrom(
    "page[number]",
    "page[size]",
    "filter[since]",
    "filter[since]",
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
  .array(
    fc.tuple(
      queryPart,
      fc.oneof(
        fc.integer({ min: -5, max: 200 }).map(String),
        fc.string({ maxLength: 8 }),
        // sync tokens: zero, leading zeros, past the user's current number, 15 and 16 digits
        fc.constantFrom("0", "00", "01", "999999999999999", "1000000000000000", "1e3", " 1"),
      ),
    ),
    {
      maxLength: 3,
    },
  )
  .map((pairs) => (pairs.length === 0 ? "" : `?${pairs.map(([k, v]) => `${k}=${v.replace(/[#&]/g, "")}`).join("&")}`));

const authorization = fc.oneof(
  fc.constant("valid"),
  fc.constant("expired"),
  fc.constant(undefined),
  fc.string({ maxLength: 40 }).map((value) => `Bearer ${value}`),
  fc.string({ maxLength: 40 }),
);

const ifNoneMatch = fc.option(fc.oneof(fc.constant("*"), fc.string({ maxLength: 20 })), { nil: undefined });

/** Anything at all: most of these stop at authentication or negotiation. */
const anyRequest = fc.record({
  method: fc.constantFrom("GET", "POST", "DELETE", "PUT", "PATCH", "HEAD"),
  path,
  query,
  contentType: fc.option(mediaType, { nil: undefined }),
  accept: fc.option(mediaType, { nil: undefined }),
  ifNoneMatch,
  authorization,
  body,
});

/** Authenticated and negotiated correctly, so that bodies and parameters reach validation and the database. */
const wellAddressed = (
  method: string,
  target: fc.Arbitrary<string>,
  mediaTypeFor: string,
  extra: Record<string, fc.Arbitrary<unknown>> = {},
) =>
  fc.record({
    method: fc.constant(method),
    path: target,
    query: fc.constant(""),
    contentType: fc.constant(mediaTypeFor),
    accept: fc.constant(mediaTypeFor),
    ifNoneMatch: fc.constant(undefined),
    authorization: fc.constant("valid"),
    body,
    ...extra,
  });
/** Mostly well-formed resources, so that many requests get past validation to the database. */
const likelyResource = fc.record({
  type: fc.oneof(
    { weight: 4, arbitrary: fc.constant("subscription") },
    resource.map((value) => value.type),
  ),
  id: fc.oneof({ weight: 2, arbitrary: fc.constant(knownGuid) }, { weight: 2, arbitrary: fc.uuid() }, guid),
  attributes: fc.record({ feedUrl }, { requiredKeys: [] }),
});
const likelyOperation = fc.oneof(
  fc.record({ op: fc.constant("add"), data: likelyResource }),
  fc.record({ op: fc.constant("update"), data: likelyResource }),
  fc.record({
    op: fc.constant("remove"),
    ref: fc.record({ type: fc.constant("subscription"), id: likelyResource.map((value) => value.id) }),
  }),
);
const withBrokenUtf8 = (json: fc.Arbitrary<string>) =>
  fc.oneof({ weight: 5, arbitrary: json }, { weight: 1, arbitrary: json.chain((text) => notUtf8Of(text)) });
const singleBody = fc.oneof(
  { weight: 3, arbitrary: withBrokenUtf8(likelyResource.map((data) => JSON.stringify({ data }))) },
  { weight: 1, arbitrary: body },
);
const bulkBody = fc.oneof(
  {
    weight: 3,
    arbitrary: withBrokenUtf8(
      fc
        .array(fc.oneof({ weight: 4, arbitrary: likelyOperation }, fc.anything()), { minLength: 1, maxLength: 8 })
        .map((operations) => JSON.stringify({ "atomic:operations": operations })),
    ),
  },
  { weight: 1, arbitrary: body },
);

/** Change-feed queries (docs/API.md §8): tokens issued or not, sizes in and out of range, page[number] mixed in. */
const rarely = <T>(arbitrary: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
const syncQuery = fc
  .record({
    since: fc.oneof(
      { weight: 4, arbitrary: fc.nat({ max: 60 }).map(String) },
      fc.constantFrom("01", "-1", "1.5", "", "999999999999999", "1000000000000000"),
    ),
    size: fc.oneof(fc.integer({ min: 1, max: 100 }).map(String), rarely(fc.integer({ min: -1, max: 120 }).map(String))),
    number: rarely(fc.integer({ min: 0, max: 3 }).map(String)),
  })
  .map(({ since, size, number }) =>
    [`?filter[since]=${since}`, size && `page[size]=${size}`, number && `page[number]=${number}`]
      .filter(Boolean)
      .join("&"),
  );

const subscriptionPath = fc
  .oneof(fc.constant(knownGuid), guid)
  .map((value) => `/v1/subscriptions/${encodeURIComponent(value)}`);
const targetedRequest = fc.oneof(
  wellAddressed("PATCH", subscriptionPath, JSONAPI, { body: singleBody }),
  wellAddressed("POST", fc.constant("/v1/operations"), `${JSONAPI};ext="${ATOMIC}"`, { body: bulkBody }),
  wellAddressed("POST", fc.constant("/v1/subscriptions"), JSONAPI, { body: singleBody }),
  wellAddressed("GET", fc.constant("/v1/subscriptions"), JSONAPI, { query, ifNoneMatch }),
  wellAddressed("GET", fc.constant("/v1/subscriptions"), JSONAPI, { query: syncQuery, ifNoneMatch }),
  wellAddressed("DELETE", subscriptionPath, JSONAPI, { query }),
);

const request = fc.oneof(anyRequest, targetedRequest);

describe("property: generated requests", () => {
  it(
    `never answer 5xx, always answer errors as JSON:API, and change nothing when refused (${REQUESTS.numRuns} requests)`,
    async () => {
      const valid = await tokenFor(USER);
      const expired = await tokenFor(USER, { exp: Math.floor(Date.now() / 1000) - 60 });
      // A subscription the generated PATCH, bulk update and remove requests can find.
      await send(
        new Request(`${ORIGIN}/v1/subscriptions`, {
          method: "POST",
          headers: { Authorization: `Bearer ${valid}`, "Content-Type": JSONAPI },
          body: JSON.stringify({
            data: { type: "subscription", id: knownGuid, attributes: { feedUrl: "https://feeds.example.com/x.xml" } },
          }),
        }),
      );
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
            // The JSON:API media type; on the bulk endpoint it names the atomic extension in force.
            expect(response.headers.get("Content-Type")?.split(";")[0]).toBe(JSONAPI);
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
        { ...REQUESTS, endOnFailure: true },
      );
      vi.restoreAllMocks();
    },
    propertyTimeout(600_000),
  );
});

// ---------------------------------------------------------------------------------------------
// OPML imports: documents assembled from the pieces real and hostile files are made of.

const xmlText = (value: string) => value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
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
  it(
    `never answer 5xx; a refusal is a JSON:API error that changes nothing; an import's counts add up (${OPML_DOCUMENTS.numRuns} documents)`,
    async () => {
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
        { ...OPML_DOCUMENTS, endOnFailure: true },
      );
      vi.restoreAllMocks();
    },
    propertyTimeout(600_000),
  );
});
