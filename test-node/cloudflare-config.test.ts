import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { configProblems, configWarnings } from "../scripts/cloudflare-config.mjs";

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
  it("refuses the placeholder database id (docs/README-ops.md, step 3), and takes a real one", () => {
    const placeholder = join(directory, "wrangler-placeholder.toml");
    writeFileSync(placeholder, original);
    expect(configProblems("production", placeholder)).toEqual([expect.stringContaining("still the placeholder")]);
    const real = join(directory, "wrangler-real.toml");
    writeFileSync(
      real,
      original.replace(
        'database_id = "00000000-0000-0000-0000-000000000000"',
        'database_id = "4e1c7a52-93f2-4b1e-9d6a-0c3b5f2e8a71"',
      ),
    );
    expect(configProblems("production", real)).toEqual([]);
  });

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

describe("npm run build (the bundle CI builds, and what npm run deploy would upload)", () => {
  it("prints the database id of wrangler.toml and every binding, for the top-level environment, unwarned", () => {
    const outdir = join(directory, "dist");
    const { scripts } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    const args = (scripts.build as string).split(" ").slice(1);
    expect(args).toContain("--env=");
    const wrangler = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));
    const run = spawnSync(process.execPath, [wrangler, ...args.map((arg) => (arg === "dist" ? outdir : arg))], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      encoding: "utf8",
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    });
    // Not coloured: the output is piped.
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(0);
    const databaseId = original.match(/^database_id = "([^"]+)"/m)?.[1];
    expect(output).toMatch(new RegExp(`env\\.DB \\(${databaseId}\\)\\s+D1 Database`));
    for (const binding of original.matchAll(/^name = "(\w+_RATE_LIMITER)"/gm))
      expect(output).toContain(`env.${binding[1]} (`);
    expect(output).toContain('env.OIDC_ISSUER ("")');
    expect(output).not.toContain("WARNING");
  });
});
