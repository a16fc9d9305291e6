/** Request limits, stated in the README. Page-size limits live with pagination. */

/** Larger request bodies answer 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Operations per POST /v1/operations; more answer 413. */
export const MAX_OPERATIONS = 100;
