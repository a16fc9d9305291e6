#!/usr/bin/env node
// Copies Swagger UI's prebuilt bundle from node_modules/swagger-ui-dist into public/assets/swagger-ui/, where
// Workers static assets serve it for /docs. The copy is committed (see docs/README-openapi.md); a test fails
// when it differs from the installed package, so after upgrading swagger-ui-dist run `npm run docs:ui`.
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const SOURCE = new URL("../node_modules/swagger-ui-dist/", import.meta.url);
export const VENDOR_DIR = new URL("../public/assets/swagger-ui/", import.meta.url);
/** The bundle (React and all included), its stylesheet, and the license notices that must travel with them. */
export const VENDORED_FILES = ["swagger-ui-bundle.js", "swagger-ui.css", "LICENSE", "NOTICE"];

/** The installed swagger-ui-dist version. */
export function installedVersion() {
  return JSON.parse(readFileSync(new URL("package.json", SOURCE), "utf8")).version;
}

/** [installed file, committed copy] for every vendored file. */
export function vendoredPairs() {
  return VENDORED_FILES.map((name) => [fileURLToPath(new URL(name, SOURCE)), fileURLToPath(new URL(name, VENDOR_DIR))]);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  mkdirSync(VENDOR_DIR, { recursive: true });
  for (const [from, to] of vendoredPairs()) copyFileSync(from, to);
  console.log(`Copied swagger-ui-dist ${installedVersion()} to public/assets/swagger-ui/.`);
}
