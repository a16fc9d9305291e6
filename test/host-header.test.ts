import { describe, expect, it } from "vitest";
import {
  ATOMIC,
  ATOMIC_MEDIA_TYPE,
  addOperation,
  JSONAPI,
  newFeed,
  send,
  subscriptionDocument,
  tokenFor,
} from "./helpers";

/**
 * Without PUBLIC_BASE_URL some responses carry the request's Host (the link-method extension URI, the
 * Location of a new subscription). A forged Host must never reach other clients through a shared
 * cache: such responses are private or no-store. With PUBLIC_BASE_URL they carry no Host at all.
 */

const FORGED_ORIGIN = "https://forged-host.example";
const PUBLIC_BASE_URL = "https://api.example.com";

async function everyKindOfResponse(bindings: Record<string, unknown>) {
  const token = await tokenFor("host-header-user");
  const auth = { Authorization: `Bearer ${token}` };
  const linkMethod = `${(bindings.PUBLIC_BASE_URL as string) || FORGED_ORIGIN}/ext/link-method`;
  const at = (path: string, init: RequestInit = {}) => send(new Request(`${FORGED_ORIGIN}${path}`, init), bindings);
  const feed = newFeed();
  return {
    "GET /ext/link-method": await at("/ext/link-method"),
    "HEAD /ext/link-method": await at("/ext/link-method", { method: "HEAD" }),
    "POST /v1/subscriptions (201, Location)": await at("/v1/subscriptions", {
      method: "POST",
      headers: { ...auth, "Content-Type": JSONAPI },
      body: JSON.stringify(subscriptionDocument(feed.guid, feed.feedUrl)),
    }),
    "POST /v1/operations (link-method in ext)": await at("/v1/operations", {
      method: "POST",
      headers: { ...auth, "Content-Type": ATOMIC_MEDIA_TYPE, Accept: `${JSONAPI};ext="${ATOMIC} ${linkMethod}"` },
      body: JSON.stringify({ "atomic:operations": [addOperation(crypto.randomUUID(), feed.feedUrl)] }),
    }),
    "GET /v1/subscriptions": await at("/v1/subscriptions", { headers: auth }),
    "GET /v1/subscriptions/{guid}": await at(`/v1/subscriptions/${feed.guid}`, { headers: auth }),
    "415": await at("/v1/operations", {
      method: "POST",
      headers: { ...auth, "Content-Type": `${JSONAPI};ext="${ATOMIC} https://unknown.example/ext"` },
      body: "{}",
    }),
    "406": await at("/v1/subscriptions", { headers: { ...auth, Accept: `${JSONAPI};charset=utf-8` } }),
    "404": await at("/nowhere"),
    "405": await at("/v1/operations", { headers: auth }),
    "401": await at("/v1/subscriptions"),
  };
}

async function carriesHost(response: Response, host: string): Promise<boolean> {
  const headers = [...response.headers.entries()].some(([, value]) => value.includes(host));
  return headers || (await response.clone().text()).includes(host);
}

describe("responses derived from the Host header", () => {
  it("are never cacheable by shared caches when PUBLIC_BASE_URL is not set", async () => {
    const responses = await everyKindOfResponse({ PUBLIC_BASE_URL: "" });
    const forgedHost = new URL(FORGED_ORIGIN).host;
    const carrying: string[] = [];
    for (const [name, response] of Object.entries(responses)) {
      if (await carriesHost(response, forgedHost)) carrying.push(name);
      const cacheControl = response.headers.get("Cache-Control") ?? "";
      expect(cacheControl, name).toMatch(/\b(private|no-store)\b/);
      expect(cacheControl, name).not.toMatch(/\b(public|s-maxage)\b/);
    }
    // The scan is meaningful: these responses do echo the forged Host.
    expect(carrying).toEqual(
      expect.arrayContaining([
        "GET /ext/link-method",
        "POST /v1/subscriptions (201, Location)",
        "POST /v1/operations (link-method in ext)",
      ]),
    );
  });

  it("use PUBLIC_BASE_URL instead when it is set, and the extension's description may then be cached", async () => {
    const responses = await everyKindOfResponse({ PUBLIC_BASE_URL });
    const forgedHost = new URL(FORGED_ORIGIN).host;
    const linkMethod = responses["GET /ext/link-method"];
    expect(linkMethod.headers.get("Cache-Control")).toBe("public, max-age=86400");
    expect(await linkMethod.clone().text()).toContain(`${PUBLIC_BASE_URL}/ext/link-method`);
    const bulk = (await responses["POST /v1/operations (link-method in ext)"].clone().json()) as {
      jsonapi: { ext: string[] };
    };
    expect(bulk.jsonapi.ext).toEqual([ATOMIC, `${PUBLIC_BASE_URL}/ext/link-method`]);
    expect(responses["POST /v1/subscriptions (201, Location)"].headers.get("Location")).toMatch(
      new RegExp(`^${PUBLIC_BASE_URL}/v1/subscriptions/`),
    );
    for (const [name, response] of Object.entries(responses)) {
      expect(await carriesHost(response, forgedHost), name).toBe(false);
    }
  });
});
