/** Types of docs-ui.mjs, for the Node-side tests. */
export const VENDOR_DIR: URL;
export const VENDORED_FILES: string[];
export function installedVersion(): string;
export function vendoredPairs(): [installed: string, committed: string][];
