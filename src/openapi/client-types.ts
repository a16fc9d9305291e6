import openapiTS from "openapi-typescript";
import type { Json } from "./components";

/**
 * The typed client's types (client/src/openapi.ts): what openapi-typescript, a generator apps use, makes
 * of the document. The client is written against them, so a document that says something the client does
 * not expect fails its type check, and test-node/client-package.test.ts type-checks served responses
 * against them. `npm run openapi` writes the file; a test fails while it is stale.
 */
export async function renderClientTypes(document: Json): Promise<string> {
  const types = await openapiTS(document as unknown as Parameters<typeof openapiTS>[0], { immutableTypes: false });
  return `// Generated from public/openapi.json by openapi-typescript (npm run openapi). Do not edit.\n${types}`;
}
