import { describe, expect, it } from "vitest";
import {
  ATOMIC_MEDIA_TYPE,
  addOperation,
  as,
  databaseFor,
  JSONAPI,
  ORIGIN,
  send,
  subscriptionDocument,
  tokenFor,
} from "./helpers";

type ErrorObject = { status: string; title: string; detail: string; source?: { pointer?: string } };
type ErrorDocument = { errors: ErrorObject[] };
type BulkDocument = { "atomic:results": { data?: unknown; errors?: ErrorObject[] }[] };

const PREFIX = "https://feeds.example.com/";
const utf8Bytes = (value: string) => new TextEncoder().encode(value).byteLength;

async function storedFeeds(userId: string): Promise<string[]> {
  const { results } = await (await databaseFor(userId))
    // The row keeps a head of a long URL and url_pieces the rest (drizzle/0007): the stored text is both.
    .prepare(
      `SELECT feed_url || coalesce((SELECT group_concat(piece, '') FROM (SELECT piece FROM url_pieces AS p
        WHERE p.user_id = s.user_id AND p.owner = s.guid AND p.field = 0 ORDER BY p.n)), '') AS feed_url
      FROM subscriptions AS s WHERE user_id = ? ORDER BY guid`,
    )
    .bind(userId)
    .all<{ feed_url: string }>();
  return results.map((row) => row.feed_url);
}

/** Sends raw bytes as a JSON:API body (the test helpers send strings, which are always valid UTF-8). */
async function postBytes(userId: string, path: string, bytes: Uint8Array, contentType = JSONAPI, method = "POST") {
  return send(
    new Request(`${ORIGIN}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${await tokenFor(userId)}`,
        "Content-Type": contentType,
        Accept: contentType,
      },
      body: bytes,
    }),
  );
}

/** `prefix` + the bytes + `suffix`, the bytes spliced in raw (not as characters). */
function withRawBytes(prefix: string, bytes: number[], suffix: string): Uint8Array {
  const encoder = new TextEncoder();
  return new Uint8Array([...encoder.encode(prefix), ...bytes, ...encoder.encode(suffix)]);
}

describe("feedUrl limits (UTF-8 bytes, control and bidi characters)", () => {
  const exactly2048 = {
    "two-byte characters": `${PREFIX}${"é".repeat((2048 - PREFIX.length) / 2)}`,
    "four-byte characters": `${PREFIX}${"😀".repeat(505)}ab`,
    "three-byte characters": `${PREFIX}${"フ".repeat(674)}`,
  };
  for (const [name, feedUrl] of Object.entries(exactly2048)) {
    it(`accepts exactly 2048 bytes of ${name} and stores them unchanged`, async () => {
      expect(utf8Bytes(feedUrl)).toBe(2048);
      const user = await as(`limits-2048-${name}`);
      const response = await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), feedUrl));
      expect(response.status).toBe(201);
      expect(await storedFeeds(user.userId)).toEqual([feedUrl]);
    });
  }

  it("refuses 2049 bytes even when that is far fewer than 2048 characters, and stores nothing", async () => {
    const user = await as("limits-2049");
    const overByOne = {
      twoByte: `${PREFIX}${"é".repeat((2048 - PREFIX.length) / 2)}a`,
      fourByte: `${PREFIX}${"😀".repeat(505)}abc`,
      threeByte: `${PREFIX}${"フ".repeat(674)}a`,
    };
    for (const feedUrl of Object.values(overByOne)) {
      expect(utf8Bytes(feedUrl)).toBe(2049);
      expect(feedUrl.length).toBeLessThan(2048);
      const response = await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), feedUrl));
      expect(response.status).toBe(422);
      const [error] = ((await response.json()) as ErrorDocument).errors;
      expect(error.source?.pointer).toBe("/data/attributes/feedUrl");
      expect(error.detail).toContain("2048 bytes");
    }
    expect(await storedFeeds(user.userId)).toEqual([]);
  });

  const refused: Record<string, string> = {
    "NUL (C0)": "\u0000",
    "unit separator (C0)": "\u001f",
    DEL: "\u007f",
    "U+0080 (C1)": "\u0080",
    "NEL U+0085 (C1)": "\u0085",
    "U+009F (C1)": "\u009f",
    "LEFT-TO-RIGHT MARK": "\u200e",
    "RIGHT-TO-LEFT MARK": "\u200f",
    "LEFT-TO-RIGHT EMBEDDING": "\u202a",
    "RIGHT-TO-LEFT OVERRIDE": "\u202e",
    "LEFT-TO-RIGHT ISOLATE": "\u2066",
    "RIGHT-TO-LEFT ISOLATE": "\u2067",
    "FIRST STRONG ISOLATE": "\u2068",
    "POP DIRECTIONAL ISOLATE": "\u2069",
    "the noncharacter U+FFFE (not XML: an OPML export could not carry it)": "\ufffe",
    "the noncharacter U+FFFF (not XML)": "\uffff",
  };
  for (const [name, character] of Object.entries(refused)) {
    it(`refuses a feedUrl holding ${name} with 422, single and in bulk`, async () => {
      const user = await as("limits-controls");
      const feedUrl = `${PREFIX}show/${character}gpj.exe`;
      const single = await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), feedUrl));
      expect(single.status).toBe(422);
      expect(((await single.json()) as ErrorDocument).errors[0].source?.pointer).toBe("/data/attributes/feedUrl");
      const bulk = await user.operations({ "atomic:operations": [addOperation(crypto.randomUUID(), feedUrl)] });
      const [result] = ((await bulk.json()) as BulkDocument)["atomic:results"];
      expect(result.errors?.[0]).toMatchObject({
        status: "422",
        source: { pointer: "/atomic:operations/0/data/attributes/feedUrl" },
      });
      expect(await storedFeeds(user.userId)).toEqual([]);
    });
  }

  it("accepts the characters just outside the refused ranges, stored exactly as sent", async () => {
    const user = await as("limits-neighbours");
    // U+00A1 follows C1; U+2010 follows the format characters U+200B-U+200F; U+2030 follows the embeddings
    // (U+202F is a space); U+2070 follows the isolates and U+2060-U+2064 (format); U+FFFD precedes the
    // noncharacters, U+10000 follows them.
    const feedUrls = ["\u00a1", "\u2010", "\u2030", "\u2070", "\ufffd", "\u{10000}"].map(
      (ch) => `${PREFIX}show/${ch}.xml`,
    );
    for (const feedUrl of feedUrls) {
      const response = await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), feedUrl));
      expect(response.status, JSON.stringify(feedUrl)).toBe(201);
    }
    expect((await storedFeeds(user.userId)).sort()).toEqual([...feedUrls].sort());
  });
});

describe("request bodies that are not UTF-8", () => {
  const guid = "3b7c2f1e-2222-4333-8444-955556666777";
  const invalid: Record<string, number[]> = {
    "a lone continuation byte": [0x80],
    "0xFF": [0xff],
    "an overlong encoding of '/'": [0xc0, 0xaf],
    "an encoded surrogate": [0xed, 0xa0, 0x80],
    "a truncated sequence": [0xe3, 0x83],
  };
  for (const [name, bytes] of Object.entries(invalid)) {
    it(`answers 400 for ${name} in a feedUrl (POST, bulk, PATCH), and changes nothing`, async () => {
      const userId = "utf8-invalid";
      const document = JSON.stringify(subscriptionDocument(guid, `${PREFIX}show-`));
      const [head, tail] = document.split("show-");
      const single = await postBytes(userId, "/v1/subscriptions", withRawBytes(`${head}show-`, bytes, tail));
      expect(single.status).toBe(400);
      expect(single.headers.get("Content-Type")).toBe(JSONAPI);
      const [error] = ((await single.json()) as ErrorDocument).errors;
      expect(error).toMatchObject({ status: "400", title: "Malformed request body" });
      expect(error.detail).toContain("UTF-8");
      expect(error.source).toBeUndefined();

      const operations = JSON.stringify({ "atomic:operations": [addOperation(guid, `${PREFIX}show-`)] });
      const [opsHead, opsTail] = operations.split("show-");
      const bulk = await postBytes(
        userId,
        "/v1/operations",
        withRawBytes(`${opsHead}show-`, bytes, opsTail),
        ATOMIC_MEDIA_TYPE,
      );
      expect(bulk.status).toBe(400);
      expect(((await bulk.json()) as ErrorDocument).errors[0].detail).toContain("UTF-8");
      expect(await storedFeeds(userId)).toEqual([]);

      const moving = await as(`${userId}-patch`);
      await moving.post("/v1/subscriptions", subscriptionDocument(guid, `${PREFIX}before.xml`));
      const patch = await postBytes(
        moving.userId,
        `/v1/subscriptions/${guid}`,
        withRawBytes(`${head}show-`, bytes, tail),
        JSONAPI,
        "PATCH",
      );
      expect(patch.status).toBe(400);
      expect(((await patch.json()) as ErrorDocument).errors[0].detail).toContain("UTF-8");
      expect(await storedFeeds(moving.userId)).toEqual([`${PREFIX}before.xml`]);
    });
  }

  it("accepts multi-byte UTF-8 (and a leading byte-order mark) and stores the characters exactly", async () => {
    const userId = "utf8-valid";
    const feedUrl = "https://例え.jp/フィード/😀.xml";
    const bytes = new TextEncoder().encode(JSON.stringify(subscriptionDocument(crypto.randomUUID(), feedUrl)));
    expect((await postBytes(userId, "/v1/subscriptions", bytes)).status).toBe(201);
    const withBom = new Uint8Array([
      0xef,
      0xbb,
      0xbf,
      ...new TextEncoder().encode(JSON.stringify(subscriptionDocument(crypto.randomUUID(), `${feedUrl}?2`))),
    ]);
    expect((await postBytes(userId, "/v1/subscriptions", withBom)).status).toBe(201);
    expect((await storedFeeds(userId)).sort()).toEqual([feedUrl, `${feedUrl}?2`].sort());
  });

  it("checks the size (413) before the encoding (400), and the media type (415) before both", async () => {
    const userId = "utf8-order";
    const hugeAndBroken = new Uint8Array(1024 * 1024 + 1).fill(0xff);
    expect((await postBytes(userId, "/v1/subscriptions", hugeAndBroken)).status).toBe(413);
    expect((await postBytes(userId, "/v1/subscriptions", hugeAndBroken, "application/json")).status).toBe(415);
    expect((await postBytes(userId, "/v1/subscriptions", new Uint8Array([0xff]), "text/plain")).status).toBe(415);
  });

  it("answers 413 for a streamed body without Content-Length once it passes 1 MiB", async () => {
    const chunk = new TextEncoder().encode(" ".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 20) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const response = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, {
        method: "POST",
        headers: { Authorization: `Bearer ${await tokenFor("utf8-stream")}`, "Content-Type": JSONAPI },
        body: stream,
      }),
    );
    expect(response.status).toBe(413);
    expect(((await response.json()) as ErrorDocument).errors[0].title).toBe("Request body too large");
  });
});

describe("bulk operation details", () => {
  it("names the operation's data, not the request body, when data is not an object", async () => {
    const user = await as("bulk-data-detail");
    for (const data of [[], "x", 7, null]) {
      const response = await user.operations({ "atomic:operations": [{ op: "add", data }] });
      const [result] = ((await response.json()) as BulkDocument)["atomic:results"];
      const [error] = result.errors ?? [];
      expect(error.source?.pointer, JSON.stringify(data)).toBe("/atomic:operations/0/data");
      expect(error.detail).toBe("data must be a JSON object.");
      expect(error.detail).not.toContain("request body");
    }
  });
});
