const encoder = new TextEncoder();

/**
 * The key a stored URL is found by (`subscriptions.url_key`): the first 48 bits of SHA-256 of its exact text,
 * as an integer. A lookup compares the URL itself too, so a collision costs a table read, never a wrong
 * answer; a cryptographic hash keeps an account from crafting thousands of colliding URLs to make its own
 * lookups read them all.
 */
export async function urlKey(url: string): Promise<number> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(url)));
  const high = (digest[0] << 8) | digest[1];
  const low = ((digest[2] << 24) | (digest[3] << 16) | (digest[4] << 8) | digest[5]) >>> 0;
  return high * 2 ** 32 + low;
}
