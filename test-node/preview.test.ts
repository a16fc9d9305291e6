import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { experimental_readRawConfig } from "wrangler";
import { previewDatabaseName, previewSlug, renderPreviewConfig, writePreviewConfig } from "../scripts/preview.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const WRANGLER = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const production = experimental_readRawConfig({ config: join(ROOT, "wrangler.toml") }).rawConfig;

/** Two branches whose names need cleaning, each with the id `wrangler d1 create` would have given it. */
const BRANCHES = [
  { branch: "feature/Login_page", databaseId: "1a2b3c4d-0000-4000-8000-00000000000a" },
  {
    branch: "Renovate/@cloudflare/Workers-Types 4.2026.11 (major) -- and a very long tail",
    databaseId: "1a2b3c4d-0000-4000-8000-00000000000b",
  },
];

const temp = mkdtempSync(join(tmpdir(), "preview-config-"));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

type D1 = { binding: string; database_name: string; database_id: string; migrations_dir?: string };

describe("one preview database per branch", () => {
  it("names the Preview and its database after the branch, DNS- and D1-safe, distinct per branch", () => {
    expect(previewSlug("feature/Login_page")).toBe("feature-login-page");
    expect(previewDatabaseName("feature/Login_page")).toBe(`${production.name}-pv-feature-login-page`);
    const names = BRANCHES.map(({ branch }) => previewDatabaseName(branch));
    expect(new Set(names).size).toBe(BRANCHES.length);
    for (const name of names) {
      expect(name).toMatch(/^[a-z0-9]+(?:-[a-z0-9]+)*$/);
      expect(name.length).toBeLessThanOrEqual(63);
      expect(name).not.toBe(production.d1_databases?.[0].database_name);
    }
    for (const { branch } of BRANCHES) expect(previewSlug(branch).length).toBeLessThanOrEqual(40);
  });

  it.each(BRANCHES)("renders $branch's config bound to its own database only", ({ branch, databaseId }) => {
    const outFile = join(temp, previewSlug(branch), "wrangler.json");
    const config = renderPreviewConfig(branch, databaseId, outFile);
    const database_name = previewDatabaseName(branch);
    const migrated = (config.d1_databases as D1[]).find((db) => db.binding === "DB");
    const bound = (config.previews.d1_databases as D1[]).find((db) => db.binding === "DB");
    // What `wrangler d1 migrations apply DB --remote` migrates and what the Preview binds: the branch's database.
    expect(migrated).toMatchObject({ database_name, database_id: databaseId });
    expect(bound).toEqual({ binding: "DB", database_name, database_id: databaseId });
    const everyD1 = [...(config.d1_databases as D1[]), ...(config.previews.d1_databases as D1[])];
    const productionDb = production.d1_databases?.find((db: D1) => db.binding === "DB") as D1;
    expect(everyD1.filter((db) => db.database_name === productionDb.database_name)).toEqual([]);
    expect(everyD1.filter((db) => db.database_id === productionDb.database_id)).toEqual([]);
    // Everything else the Preview needs is wrangler.toml's, unchanged.
    expect(config.name).toBe(production.name);
    expect(config.previews.vars).toEqual(production.previews?.vars);
    expect(config.previews.ratelimits).toEqual(production.previews?.ratelimits);
    expect(config.compatibility_date).toBe(production.compatibility_date);
    // Paths are relative to the rendered file, and lead to the repository's files.
    const base = resolve(outFile, "..");
    expect(existsSync(resolve(base, config.main))).toBe(true);
    expect(existsSync(resolve(base, config.assets.directory, "docs.html"))).toBe(true);
    expect(existsSync(resolve(base, migrated?.migrations_dir ?? "", "0000_init.sql"))).toBe(true);
  });

  it("refuses a database id that is not a D1 id", () => {
    expect(() => renderPreviewConfig("x", "not-an-id")).toThrow(/not a D1 database id/);
  });

  it("deploys: `wrangler deploy --dry-run` of the rendered config builds, with DB bound to the branch's database", async () => {
    const { branch, databaseId } = BRANCHES[1];
    const config = writePreviewConfig(branch, databaseId, join(temp, "dry-run", "wrangler.json"));
    const saved = JSON.parse(readFileSync(config, "utf8"));
    expect(saved.previews.d1_databases[0].database_id).toBe(databaseId);
    const { code, output } = await new Promise<{ code: number; output: string }>((done) =>
      execFile(
        process.execPath,
        [WRANGLER, "deploy", "--dry-run", "-c", config, "--outdir", join(temp, "dry-run", "dist")],
        { cwd: ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" }, timeout: 120_000 },
        (error, stdout, stderr) =>
          done({ code: error ? ((error.code as number) ?? 1) : 0, output: `${stdout}\n${stderr}` }),
      ),
    );
    expect(code, output).toBe(0);
    expect(output).toContain(`env.DB (${previewDatabaseName(branch)})`);
    expect(output).toMatch(/--dry-run: exiting now/);
  });
});
