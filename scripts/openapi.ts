// Writes public/openapi.json, the OpenAPI document built from the zod schemas (src/openapi/).
// Workers static assets serve it at GET /openapi.json. Usage: npm run openapi
import { writeFileSync } from "node:fs";
import { renderOpenApiDocument } from "../src/openapi/document";

const file = new URL("../public/openapi.json", import.meta.url);
writeFileSync(file, renderOpenApiDocument());
console.log(`Wrote ${file.pathname}`);
