/**
 * The service's HTML pages for people (docs/API.md §16): the home page and the account pages. They are no part
 * of the API: errors on them are HTML pages (middleware/errors.ts), they carry the pages' security headers
 * (middleware/security-headers.ts), and the OpenAPI document leaves them out.
 */
export const PAGE_PREFIX = "/account";

export function isPagePath(path: string): boolean {
  return path === "/" || path === PAGE_PREFIX || path.startsWith(`${PAGE_PREFIX}/`);
}

/**
 * The pages' Content-Security-Policy: nothing but this service's own styles and images, no script at all (every
 * page works without one), forms only to this service, and never inside a frame.
 */
export const PAGE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");
