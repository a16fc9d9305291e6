import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { installedVersion, VENDORED_FILES, vendoredPairs } from "../scripts/docs-ui.mjs";

describe("public/assets/swagger-ui", () => {
  it(`is the installed swagger-ui-dist ${installedVersion()} (otherwise run \`npm run docs:ui\` and commit)`, () => {
    const stale = vendoredPairs()
      .filter(([installed, committed]) => !readFileSync(installed).equals(readFileSync(committed)))
      .map(([, committed]) => committed);
    expect(stale).toEqual([]);
    expect(VENDORED_FILES).toEqual(expect.arrayContaining(["swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"]));
  });
});
