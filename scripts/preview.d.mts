/** Types of preview.mjs, for the Node-side tests. */
export function previewSlug(branch: string): string;
export function previewDatabaseName(branch: string, workerName?: string): string;
export function renderedConfigPath(branch: string): string;
// biome-ignore lint/suspicious/noExplicitAny: a wrangler configuration, as JSON.
export function renderPreviewConfig(branch: string, databaseId: string, outFile?: string): Record<string, any>;
export function writePreviewConfig(branch: string, databaseId: string, outFile?: string): string;
