/**
 * The podcast:guid of a feed URL (Podcasting 2.0 namespace, `<podcast:guid>`): a UUIDv5 (RFC 9562,
 * SHA-1) in the "podcast" namespace of the URL without its scheme and without trailing slashes. A
 * podcast keeps the guid it was first given even when its feed moves, so this names a feed only
 * when nothing better is known (an OPML outline without a guid, an app about to subscribe).
 *
 * Depends on nothing but Web Crypto: the typed client re-exports it for apps.
 */

/** The "podcast" namespace UUID of the podcast:guid specification. */
export const PODCAST_GUID_NAMESPACE = "ead4c236-bf58-58c6-a2c6-a6b28d128cb6";

const NAMESPACE_BYTES = hexToBytes(PODCAST_GUID_NAMESPACE.replaceAll("-", ""));
const encoder = new TextEncoder();

function hexToBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

function formatUuid(bytes: Uint8Array): string {
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The name the guid is derived from: `https://example.com/feed/` names `example.com/feed`. */
export function podcastGuidName(feedUrl: string): string {
  return feedUrl.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//, "").replace(/\/+$/, "");
}

/** `https://example.com/feed1` -> `677ea490-690e-51cb-8b43-755df6c55270` (lowercase). */
export function podcastGuid(feedUrl: string): Promise<string> {
  return uuidV5(PODCAST_GUID_NAMESPACE, podcastGuidName(feedUrl));
}

/**
 * A UUIDv5 (RFC 9562: SHA-1 of the namespace's 16 bytes and the name's UTF-8), lowercase. Also how apps name
 * an episode: in the namespace of its feed's guid, of the item's `<guid>` (docs/API.md §13).
 */
export async function uuidV5(namespace: string, name: string): Promise<string> {
  const namespaceBytes =
    namespace === PODCAST_GUID_NAMESPACE ? NAMESPACE_BYTES : hexToBytes(namespace.replaceAll("-", ""));
  const nameBytes = encoder.encode(name);
  const input = new Uint8Array(namespaceBytes.length + nameBytes.length);
  input.set(namespaceBytes);
  input.set(nameBytes, namespaceBytes.length);
  const bytes = new Uint8Array(await crypto.subtle.digest("SHA-1", input)).slice(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x50; // version 5
  bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 9562 variant
  return formatUuid(bytes);
}
