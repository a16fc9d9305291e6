/** Request limits, stated in docs/API.md §12 and docs/app-developers.md. Page-size limits live with pagination. */

/** Larger request bodies answer 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Operations per POST /v1/operations; more answer 413. */
export const MAX_OPERATIONS = 100;

/** Outlines with an `xmlUrl` per OPML import (valid or not); more answer 413 and nothing is written. */
export const MAX_OPML_FEEDS = 1000;
