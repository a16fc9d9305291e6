import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { configWarnings } from "../scripts/cloudflare-config.mjs";

/** The deploy check (`npm run deploy` runs it first) on copies of this repository's wrangler.toml. */
const directory = mkdtempSync(join(tmpdir(), "cloudflare-config-"));
const original = readFileSync(new URL("../wrangler.toml", import.meta.url), "utf8");

function configWith(publicBaseUrl: string): string {
  const path = join(directory, `wrangler-${publicBaseUrl.length}.toml`);
  // Only the top-level [vars] entry (the first one); previews keep theirs.
  writeFileSync(path, original.replace('PUBLIC_BASE_URL = ""', `PUBLIC_BASE_URL = "${publicBaseUrl}"`));
  return path;
}

afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe("deploy configuration check", () => {
  it("warns when PUBLIC_BASE_URL is not set for production", () => {
    expect(original).toContain('PUBLIC_BASE_URL = ""');
    const warnings = configWarnings("production", configWith(""));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("PUBLIC_BASE_URL");
  });

  it("is quiet once PUBLIC_BASE_URL is set, and for previews", () => {
    expect(configWarnings("production", configWith("https://api.example.com"))).toEqual([]);
    expect(configWarnings("preview", configWith(""))).toEqual([]);
  });
});
