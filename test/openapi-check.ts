import { type OutputUnit, Validator } from "@cfworker/json-schema";
import { isGpodderPath } from "../src/middleware/errors";
import { isPagePath } from "../src/pages/paths";

/**
 * Checks that a response the worker gave is what the OpenAPI document says the operation answers: the
 * operation exists, lists the status and the media type, the body validates against its schema (formats
 * and patterns included), and documented headers present in the response validate against theirs.
 *
 * It runs inside workerd, beside the tests that made the requests (see `./recorded-responses.ts`), with
 * `@cfworker/json-schema`, a JSON Schema 2020-12 validator that interprets schemas instead of compiling
 * them with `new Function` (which workerd forbids, so ajv cannot run here). Pure functions: no vitest.
 */

type Json = Record<string, unknown>;

export interface Exchange {
  method: string;
  /** The request's URL. */
  url: string;
  status: number;
  headers: Headers;
  /** The response body as text ("" for none). */
  body: string;
}

/** A Hono route of the app (`app.routes`): what tells an undocumented operation from an unknown path. */
export interface AppRoute {
  method: string;
  path: string;
}

/**
 * What the app's own 404 and 405 answer: a JSON:API error document, and on the gpodder.net API's paths that
 * API's own error shape (`{"error": <text>}`, docs/API.md §14).
 */
const ERRORS: Json = { "application/vnd.api+json": { schema: { $ref: "#/components/schemas/ErrorDocument" } } };
const GPODDER_ERRORS: Json = {
  "application/json": {
    schema: {
      type: "object",
      required: ["error"],
      properties: { error: { type: "string" } },
      additionalProperties: false,
    },
  },
};

const HOW_TO_REGENERATE = "then run `npm run openapi` to regenerate public/openapi.json";

/** Where a path's OpenAPI description lives, by the project's rule (docs/README-openapi.md). */
function describedIn(path: string): string {
  const resource = /^\/v\d+\/([a-z-]+)/.exec(path)?.[1];
  return resource ? `src/routes/${resource}.openapi.ts` : "src/routes/<resource>.openapi.ts";
}

const templateCache = new Map<string, RegExp>();

/** `/v1/subscriptions/{guid}` (OpenAPI) or `/v1/subscriptions/:guid` (Hono) as a regular expression. */
function pathPattern(template: string): RegExp {
  let pattern = templateCache.get(template);
  if (pattern === undefined) {
    const source = template
      .replace(/\/+$/, "")
      .split(/(\{[^}]+\}|:[A-Za-z0-9_]+(?:\{[^}]*\})?|\*)/)
      .map((part, index) => {
        if (index % 2 === 0) return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
        return part === "*" ? ".*" : "[^/]+?";
      })
      .join("");
    pattern = new RegExp(`^${source}$`);
    templateCache.set(template, pattern);
  }
  return pattern;
}

/** The documented path template that `pathname` falls under: the one with the fewest parameters. */
function documentedPath(document: Json, pathname: string): string | undefined {
  const matches = Object.keys(document.paths as Json).filter((template) => pathPattern(template).test(pathname));
  return matches.sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0))[0];
}

function resolve(document: Json, value: unknown): Json | undefined {
  let node = value as Json | undefined;
  while (node && typeof node.$ref === "string") {
    node = (node.$ref as string)
      .slice(2)
      .split("/")
      .reduce<unknown>((at, key) => (at as Json | undefined)?.[key], document) as Json | undefined;
  }
  return node;
}

function essence(mediaType: string): string {
  return mediaType.split(";")[0].trim().toLowerCase();
}

/** Media types compared as written, then by their parameters' set, then by essence alone. */
function documentedMediaType(content: Json, contentType: string): string | undefined {
  const normalise = (type: string) =>
    type
      .split(";")
      .map((part) => part.trim().replace(/\s*=\s*/, "="))
      .join(";")
      .toLowerCase();
  const keys = Object.keys(content);
  return (
    keys.find((key) => normalise(key) === normalise(contentType)) ??
    keys.find((key) => essence(key) === essence(contentType))
  );
}

const isJson = (mediaType: string) => /^application\/(.+\+)?json$/.test(essence(mediaType));

const validators = new WeakMap<object, Validator>();

/**
 * A validator for `schema`, in which `#/components/schemas/X` resolves to the document's component X
 * (copied into `$defs`: JSON Schema resolves `$ref` only through keywords it knows).
 */
function validatorFor(document: Json, schema: Json): Validator {
  let validator = validators.get(schema);
  if (validator === undefined) {
    const rewrite = (value: unknown) =>
      JSON.parse(JSON.stringify(value).replaceAll('"#/components/schemas/', '"#/$defs/')) as Json;
    const components = (document.components as Json | undefined)?.schemas ?? {};
    validator = new Validator({ ...rewrite(schema), $defs: rewrite(components) }, "2020-12", false);
    validators.set(schema, validator);
  }
  return validator;
}

function describeErrors(errors: OutputUnit[]): string {
  // The deepest errors say what is wrong; the ones above them only that a subschema failed.
  const leaves = errors.filter(
    (error) =>
      !errors.some((other) => other !== error && other.keywordLocation.startsWith(`${error.keywordLocation}/`)),
  );
  return leaves
    .slice(0, 6)
    .map((error) => `    at ${error.instanceLocation || "#"}: ${error.error} (${error.keywordLocation})`)
    .join("\n");
}

function excerpt(body: string): string {
  return body.length > 400 ? `${body.slice(0, 400)}...` : body;
}

/**
 * What is wrong with one exchange, or undefined when the document describes it. The first line names the
 * operation, status and problem (problems are grouped by it); the rest says what to add where.
 */
export function checkExchange(document: Json, routes: readonly AppRoute[], exchange: Exchange): string | undefined {
  const { pathname } = new URL(exchange.url);
  // The HTML pages for people (docs/API.md §16) are no part of the API, nor of its document.
  if (isPagePath(pathname)) return undefined;
  // HEAD is answered by the GET route (Hono), with the GET's status and headers and no body.
  const method = exchange.method.toLowerCase() === "head" ? "get" : exchange.method.toLowerCase();
  const contentType = exchange.headers.get("Content-Type");
  const template = documentedPath(document, pathname);
  const item = template === undefined ? undefined : (resolve(document, (document.paths as Json)[template]) ?? {});
  const operation = item?.[method] as Json | undefined;

  if (operation === undefined) {
    const routed = routes.some(
      (route) => route.method === method.toUpperCase() && pathPattern(route.path).test(pathname),
    );
    if (routed) {
      const shown = template ?? pathname;
      return `${exchange.method.toUpperCase()} ${shown}: undocumented operation (it answered ${exchange.status}).
  public/openapi.json has no "${method}" operation under paths["${shown}"]. Describe it in ${describedIn(pathname)}
  (operationId, parameters, and responses["<status>"].content["<media type>"].schema for every status it answers),
  add the file's paths to src/openapi/document.ts, ${HOW_TO_REGENERATE}.`;
    }
    // A CORS preflight, answered before routing for any path: HTTP machinery, not an operation.
    if (method === "options" && exchange.body === "") return undefined;
    // No route takes it: the app's 404 (unknown path) or 405 (other method), or an answer of the layers
    // before routing (401 authentication, 429, 500, 503): errors in the API's own shape in every case.
    if (exchange.status < 400) {
      return `${exchange.method.toUpperCase()} ${pathname}: no route and no documented operation, yet it answered ${exchange.status}.`;
    }
    // The not-found page a browser gets for a path nothing serves (middleware/errors.ts) is a page for people,
    // as those of docs/API.md §16 are, and no part of the API or its document.
    if (exchange.status === 404 && essence(contentType ?? "") === "text/html") return undefined;
    const errors = isGpodderPath(pathname) ? GPODDER_ERRORS : ERRORS;
    return checkBody(document, `${exchange.method.toUpperCase()} ${pathname} ${exchange.status}`, errors, exchange);
  }

  const name = `${exchange.method.toUpperCase()} ${template} (operationId ${operation.operationId ?? "none"})`;
  const responses = (operation.responses ?? {}) as Json;
  const response = resolve(
    document,
    responses[String(exchange.status)] ?? responses[`${String(exchange.status)[0]}XX`] ?? responses.default,
  );
  if (response === undefined) {
    return `${name}: status ${exchange.status} is not documented.
  Add responses["${exchange.status}"] to this operation in ${describedIn(pathname)}${contentType ? `, with content["${essence(contentType)}"].schema` : ""}; ${HOW_TO_REGENERATE}.
  Body: ${excerpt(exchange.body)}`;
  }

  for (const [header, definition] of Object.entries((response.headers ?? {}) as Json)) {
    const value = exchange.headers.get(header);
    const schema = resolve(document, definition)?.schema as Json | undefined;
    if (value === null || schema === undefined) continue;
    const typed = schema.type === "integer" && /^-?[0-9]+$/.test(value) ? Number(value) : value;
    const result = validatorFor(document, schema).validate(typed);
    if (!result.valid) {
      return `${name} ${exchange.status}: header ${header} does not match its documented schema.
  Value: ${JSON.stringify(value)}
${describeErrors(result.errors)}`;
    }
  }

  return checkBody(document, `${name} ${exchange.status}`, response.content as Json | undefined, exchange);
}

function checkBody(document: Json, name: string, content: Json | undefined, exchange: Exchange): string | undefined {
  const contentType = exchange.headers.get("Content-Type");
  if (exchange.body === "" && contentType === null) {
    if (content === undefined || exchange.method.toUpperCase() === "HEAD") return undefined;
    return `${name}: the response has no body, but the document gives it content (${Object.keys(content).join(", ")}).
  Remove that content, or make the route answer it; ${HOW_TO_REGENERATE}.`;
  }
  if (exchange.method.toUpperCase() === "HEAD") return undefined;
  const mediaType = content && contentType ? documentedMediaType(content, contentType) : undefined;
  if (content === undefined || mediaType === undefined || contentType === null) {
    return `${name}: media type ${contentType ?? "(none)"} is not documented for this status.
  Add content["${contentType ? essence(contentType) : "<media type>"}"] with its schema to this response (documented: ${content ? Object.keys(content).join(", ") : "no content"}); ${HOW_TO_REGENERATE}.
  Body: ${excerpt(exchange.body)}`;
  }
  const schema = (content[mediaType] as Json).schema as Json | undefined;
  if (schema === undefined) {
    return `${name}: content["${mediaType}"] has no schema.
  Add one (a $ref to #/components/schemas/..., built from zod in src/openapi/schemas.ts); ${HOW_TO_REGENERATE}.`;
  }
  let instance: unknown = exchange.body;
  if (isJson(mediaType)) {
    try {
      instance = JSON.parse(exchange.body);
    } catch {
      return `${name}: the body is not JSON although it is sent as ${contentType}.\n  Body: ${excerpt(exchange.body)}`;
    }
  }
  const result = validatorFor(document, schema).validate(instance);
  if (result.valid) return undefined;
  return `${name}: the body does not match the documented schema of content["${mediaType}"].
${describeErrors(result.errors)}
  Body: ${excerpt(exchange.body)}`;
}
