import { ApiError, type ProblemInit } from "./jsonapi";
import { MAX_BODY_BYTES } from "./limits";

/**
 * Reading request bodies, shared by every endpoint that takes one (JSON documents, OPML files): the size
 * limit is enforced while reading, and text is decoded as strict UTF-8.
 */

/** A body over `maxBytes` (docs/API.md §5; the gpodder subscription uploads take more, §14). */
function bodyTooLarge(maxBytes: number): ProblemInit {
  return {
    status: 413,
    title: "Request body too large",
    detail: `The request body exceeds the limit of ${maxBytes / 1024 / 1024} MiB.`,
  };
}

/** docs/API.md §5: bodies over the limit. Also what Hono's own body-limit middleware's 413 becomes (errors.ts). */
export const BODY_TOO_LARGE: ProblemInit = bodyTooLarge(MAX_BODY_BYTES);

/** A body that is not JSON text. Also what a Hono JSON parse failure becomes (errors.ts). */
export const MALFORMED_JSON: ProblemInit = {
  status: 400,
  title: "Malformed request body",
  detail: "The request body is not valid JSON.",
};

/** docs/API.md §12: a body that is not UTF-8 is refused, never stored with replacement characters. */
const NOT_UTF8: ProblemInit = {
  status: 400,
  title: "Malformed request body",
  detail: "The request body is not valid UTF-8.",
};

/**
 * Reads the whole body, at most `maxBytes` of it: a declared or actual length over the limit is a 413,
 * found before the rest is read (a client may stream an endless body).
 */
export async function readBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get("Content-Length");
  if (declared !== null && Number(declared) > maxBytes) throw new ApiError(bodyTooLarge(maxBytes));
  if (!request.body) return new Uint8Array(0);
  if (declared !== null) {
    // HTTP framing ends the body at its declared length, here within the limit: one read, not one await
    // per chunk (which was a tenth of a bulk request's CPU). The check after it is a second guard.
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength > maxBytes) throw new ApiError(bodyTooLarge(maxBytes));
    return bytes;
  }
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new ApiError(bodyTooLarge(maxBytes));
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

/**
 * Strict UTF-8: `fatal` refuses what a lenient decoder would replace with U+FFFD. A leading byte-order mark
 * is dropped, as JSON readers may. One decoder per isolate: a one-shot decode keeps no state.
 */
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

export function decodeUtf8(bytes: BufferSource): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ApiError(NOT_UTF8);
  }
}
