// Writes public/openapi.json, the OpenAPI document built from the zod schemas (src/openapi/), and the typed
// client's types generated from it (client/src/openapi.ts, by openapi-typescript). Workers static assets
// serve the document at GET /openapi.json. Usage: npm run openapi
import { writeFileSync } from "node:fs";
import { renderClientTypes } from "../src/openapi/client-types";
import { buildOpenApiDocument, renderOpenApiDocument } from "../src/openapi/document";

const documentFile = new URL("../public/openapi.json", import.meta.url);
writeFileSync(documentFile, renderOpenApiDocument());
console.log(`Wrote ${documentFile.pathname}`);

const typesFile = new URL("../client/src/openapi.ts", import.meta.url);
writeFileSync(typesFile, await renderClientTypes(buildOpenApiDocument()));
console.log(`Wrote ${typesFile.pathname}`);
