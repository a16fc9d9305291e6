import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PODCAST_GUID_NAMESPACE, podcastGuid, podcastGuidName, uuidV5, uuidV5Sync } from "../src/podcast-guid";
import { propertyOptions } from "./property-options";

/** A UUIDv5 by Web Crypto's SHA-1, byte by byte as RFC 9562 §5.5 defines it: what uuidV5 must equal. */
async function webCryptoUuidV5(namespace: string, name: string): Promise<string> {
  const namespaceBytes = Uint8Array.from(namespace.replaceAll("-", "").match(/../g) ?? [], (hex) =>
    Number.parseInt(hex, 16),
  );
  const nameBytes = new TextEncoder().encode(name);
  const input = new Uint8Array([...namespaceBytes, ...nameBytes]);
  const bytes = new Uint8Array(await crypto.subtle.digest("SHA-1", input)).slice(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x50;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * podcast:guid (Podcasting 2.0 namespace): UUIDv5 in the "podcast" namespace of the feed URL without
 * its scheme and trailing slashes. Expected values are the published worked examples.
 */
describe("podcastGuid", () => {
  it("uses the podcast namespace", () => {
    expect(PODCAST_GUID_NAMESPACE).toBe("ead4c236-bf58-58c6-a2c6-a6b28d128cb6");
  });

  it("matches the contract's worked example", async () => {
    expect(await podcastGuid("https://example.com/feed1")).toBe("677ea490-690e-51cb-8b43-755df6c55270");
  });

  it("matches the podcast:guid specification's examples (Podcast Index namespace docs)", async () => {
    expect(await podcastGuid("https://mp3s.nashownotes.com/pc20rss.xml")).toBe("917393e3-1b1e-5cef-ace4-edaa54e1f810");
    expect(await podcastGuid("https://podnews.net/rss")).toBe("9b024349-ccf0-5f69-a609-6b82873eab3c");
  });

  it("ignores the scheme and trailing slashes, and nothing else", async () => {
    const expected = "917393e3-1b1e-5cef-ace4-edaa54e1f810";
    expect(await podcastGuid("http://mp3s.nashownotes.com/pc20rss.xml")).toBe(expected);
    expect(await podcastGuid("https://mp3s.nashownotes.com/pc20rss.xml///")).toBe(expected);
    expect(await podcastGuid("mp3s.nashownotes.com/pc20rss.xml")).toBe(expected);
    expect(await podcastGuid("https://mp3s.nashownotes.com/pc20rss.xml?x=1")).not.toBe(expected);
    expect(await podcastGuid("https://MP3S.nashownotes.com/pc20rss.xml")).not.toBe(expected);
  });

  it("names the URL without scheme and trailing slashes", () => {
    expect(podcastGuidName("https://example.com/a/b//")).toBe("example.com/a/b");
    expect(podcastGuidName("feed+https://example.com/x")).toBe("example.com/x");
    expect(podcastGuidName("https://example.com/a//b")).toBe("example.com/a//b");
  });

  it("is a lowercase version-5 UUID of the RFC 9562 variant", async () => {
    const guid = await podcastGuid(`https://feeds.example.com/${crypto.randomUUID()}.xml`);
    expect(guid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("is Web Crypto's UUIDv5 for any namespace and name (2 000 names: URLs, non-ASCII, past 2 048 bytes)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uuid(),
        fc.oneof(
          fc.webUrl(),
          fc.string({ unit: "grapheme", maxLength: 2048 }),
          fc.string({ minLength: 2100, maxLength: 3000 }),
        ),
        async (namespace, name) => {
          const expected = await webCryptoUuidV5(namespace, name);
          expect(uuidV5Sync(namespace, name)).toBe(expected);
          expect(await uuidV5(namespace, name)).toBe(expected);
        },
      ),
      propertyOptions(20261126, 2000),
    );
    expect(uuidV5Sync("9b024349-ccf0-5f69-a609-6b82873eab3c", "ABC-123")).toBe("4ceaf82a-1820-5c0e-893a-a95e7bcfde33");
  });
});
