import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createConfig, lintFromString, type NormalizedProblem } from "@redocly/openapi-core";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { buildOpenApiDocument, renderOpenApiDocument } from "../src/openapi/document";
import { blankStringsAndComments, statusesAnsweredByCode, statusesInSource } from "./status-scan";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const OPENAPI_FILE = `${ROOT}public/openapi.json`;
const METHODS = ["get", "put", "post", "delete", "patch", "options", "head", "trace"] as const;

// biome-ignore lint/suspicious/noExplicitAny: the test walks an arbitrary JSON document.
type Json = Record<string, any>;

function resolve(document: Json, value: Json): Json {
  if (typeof value?.$ref !== "string") return value;
  const target = value.$ref
    .slice(2)
    .split("/")
    .reduce((node: Json | undefined, token: string) => node?.[token.replace(/~1/g, "/").replace(/~0/g, "~")], document);
  return resolve(document, target as Json);
}

function operationsOf(document: Json) {
  return Object.entries(document.paths as Json).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ path, method, operation: item[method] as Json })),
  );
}

function documentedStatuses(document: Json): Set<number> {
  return new Set(
    operationsOf(document).flatMap(({ operation }) => Object.keys(operation.responses).map((status) => Number(status))),
  );
}

const format = (problems: NormalizedProblem[]) =>
  problems.map((problem) => `${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer}`).join("\n");

describe("public/openapi.json", () => {
  it("is up to date with the zod schemas (otherwise run `npm run openapi` and commit the result)", () => {
    expect(
      readFileSync(OPENAPI_FILE, "utf8") === renderOpenApiDocument(),
      "public/openapi.json is stale: run `npm run openapi`",
    ).toBe(true);
  });

  it("is the document GET /openapi.json serves", async () => {
    const response = await fetch(new URL("/openapi.json", inject("workerOrigin")));
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toMatch(/^application\/(json|vnd\.oai\.openapi\+json)\b/);
    expect(await response.json()).toEqual(buildOpenApiDocument());
  });
});

describe("the OpenAPI document", () => {
  const document = buildOpenApiDocument() as Json;
  let problems: NormalizedProblem[];

  beforeAll(async () => {
    // Redocly's built-in "recommended" ruleset: no plugins, no remote config, works offline.
    const config = await createConfig({ extends: ["recommended"] });
    problems = await lintFromString({ source: renderOpenApiDocument(), absoluteRef: OPENAPI_FILE, config });
  });

  it("is OpenAPI 3.1", () => {
    expect(document.openapi).toMatch(/^3\.1\./);
  });

  it("lints with no errors (Redocly recommended)", () => {
    const errors = problems.filter((problem) => problem.severity === "error");
    expect(format(errors)).toBe("");
  });

  it("lints with no warnings either", () => {
    const warnings = problems.filter((problem) => problem.severity === "warn");
    expect(format(warnings)).toBe("");
  });

  it("documents every route the app serves", async () => {
    const { default: app } = await import("../src/index");
    const { isPagePath } = await import("../src/pages/paths");
    const served = new Set(
      app.routes
        // The HTML pages for people (docs/API.md §16) are no part of the API the document describes.
        .filter((route) => route.method !== "ALL" && !isPagePath(route.path))
        .map((route) => `${route.method} ${route.path.replace(/\/$/, "").replace(/:([A-Za-z]+)/g, "{$1}")}`),
    );
    const documented = new Set(operationsOf(document).map(({ path, method }) => `${method.toUpperCase()} ${path}`));
    expect([...served].filter((route) => !documented.has(route))).toEqual([]);
    expect([...documented].filter((route) => !served.has(route))).toEqual([]);
  });

  it("documents every status the code can answer", () => {
    // The document's own files (src/openapi/, each route's *.openapi.ts) describe statuses; they answer none.
    const answered = statusesAnsweredByCode(
      `${ROOT}src`,
      // The HTML pages (src/pages/, docs/API.md §16) are no part of the API either.
      (file) => file.startsWith("src/openapi/") || file.endsWith(".openapi.ts") || file.startsWith("src/pages/"),
    );
    // The scan must find what the code is known to answer; an empty scan would prove nothing.
    for (const status of [200, 201, 204, 400, 401, 404, 405, 406, 409, 413, 415, 422, 500, 503]) {
      expect(answered.has(status), `the scan finds ${status}`).toBe(true);
    }
    const documented = documentedStatuses(document);
    const missing = [...answered].filter(([status]) => !documented.has(status));
    expect(missing.map(([status, where]) => `${status} (answered at ${where.join(", ")})`)).toEqual([]);
  });

  it("documents the statuses of upcoming features and the contract's error cases", () => {
    // ETag / If-None-Match, rate limiting, and every error case docs/API.md names.
    for (const status of [200, 201, 204, 304, 400, 401, 404, 405, 406, 409, 413, 415, 422, 429, 500, 503]) {
      expect(documentedStatuses(document).has(status), `status ${status} is documented`).toBe(true);
    }
  });

  it("gives every /v1 operation the bearer scheme and the shared error responses", () => {
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({
      type: "http",
      scheme: "bearer",
      bearerFormat: "JWT",
    });
    for (const { path, operation } of operationsOf(document).filter(({ path }) => path.startsWith("/v1/"))) {
      expect(operation.security ?? document.security, path).toEqual([{ bearerAuth: [] }]);
      for (const status of ["401", "405", "406", "429", "500", "503"]) {
        expect(Object.keys(operation.responses), `${path} ${status}`).toContain(status);
      }
      const tooMany = resolve(document, operation.responses["429"]);
      expect(Object.keys(tooMany.headers)).toContain("Retry-After");
      const unavailable = resolve(document, operation.responses["503"]);
      expect(Object.keys(unavailable.headers)).toContain("Retry-After");
    }
  });

  it("documents ETag / If-None-Match and 304 on the two GETs", () => {
    for (const path of ["/v1/subscriptions", "/v1/subscriptions/{guid}"]) {
      const operation = document.paths[path].get;
      const parameters = operation.parameters.map((parameter: Json) => resolve(document, parameter).name);
      expect(parameters).toContain("If-None-Match");
      expect(parameters).toContain("X-D1-Bookmark");
      expect(Object.keys(operation.responses["200"].headers)).toEqual(
        expect.arrayContaining(["ETag", "X-D1-Bookmark", "X-Request-Id"]),
      );
      expect(Object.keys(resolve(document, operation.responses["304"]).headers)).toContain("ETag");
    }
  });

  it("takes the page parameters' bounds and the guid syntax from the routes' schemas", () => {
    const parameters = document.components.parameters;
    expect(parameters.pageSize).toMatchObject({
      name: "page[size]",
      in: "query",
      schema: { type: "integer", minimum: 1, maximum: 100, default: 25 },
    });
    expect(parameters.pageNumber).toMatchObject({
      name: "page[number]",
      in: "query",
      schema: { type: "integer", minimum: 1, default: 1 },
    });
    expect(parameters.guid).toMatchObject({
      name: "guid",
      in: "path",
      required: true,
      schema: { type: "string", format: "uuid" },
    });
  });

  it("names the atomic extension in the bulk endpoint's media types", () => {
    const atomic = 'application/vnd.api+json;ext="https://jsonapi.org/ext/atomic"';
    const bulk = document.paths["/v1/operations"].post;
    expect(Object.keys(bulk.requestBody.content)).toEqual([atomic]);
    expect(Object.keys(bulk.responses["200"].content)).toEqual([atomic]);
    expect(Object.keys(document.paths["/v1/subscriptions"].post.requestBody.content)).toEqual([
      "application/vnd.api+json",
    ]);
  });
});

describe("the status scan", () => {
  it("ignores numbers in strings, templates and comments", () => {
    const code = blankStringsAndComments(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: this string is source code for the scanner.
      "const a = `x ${f(\"404\")} 418`; // 500\nrespond(c, doc, 201); /* 202 */ '203'",
    );
    expect(code).not.toMatch(/404|418|500|202|203/);
    expect(code).toContain("201");
  });

  it("finds statuses in errors, response helpers, ternaries and status tables", () => {
    const source = `
      throw new ApiError({ status: 429, title: "Too many", detail: "retry in 200 ms" });
      return c.body(null, 304, { ETag: etag });
      return respond(c, document, created ? 201 : 200);
      const titles = { 413: { title: "x" } };
      return c.text("ok");
      throw new HTTPException(401);
    `;
    const statuses = statusesInSource(source, "example.ts").map((use) => use.status);
    expect(new Set(statuses)).toEqual(new Set([429, 304, 201, 200, 413, 401]));
  });
});
