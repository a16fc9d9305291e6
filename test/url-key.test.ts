import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { urlKey } from "../src/db/url-key";
import { propertyOptions } from "./property-options";

/** The first 48 bits of SHA-256 by Web Crypto: what `url_key` is defined as (src/db/url-key.ts). */
async function webCryptoKey(url: string): Promise<number> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(url)));
  return digest.slice(0, 6).reduce((key, byte) => key * 256 + byte, 0);
}

describe("url_key", () => {
  it("is the first 48 bits of SHA-256 of the URL's UTF-8 text (2 000 URLs, non-ASCII and long ones too)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.webUrl(), fc.string({ unit: "grapheme", maxLength: 2048 })), async (url) => {
        expect(urlKey(url)).toBe(await webCryptoKey(url));
      }),
      propertyOptions(20261124, 2000),
    );
    expect(urlKey("https://example.com/feed1")).toBe(await webCryptoKey("https://example.com/feed1"));
    expect(Number.isSafeInteger(urlKey("x"))).toBe(true);
  });
});
