// The API reference page (/docs): renders /openapi.json (OpenAPI 3.1) in the browser.
// Self-contained on purpose: no framework, no fonts, no requests to any other host.

const METHODS = ["get", "put", "post", "delete", "patch", "options", "head", "trace"];

/** Creates an element: h("td", { class: "name" }, "text", child, ...). */
function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

function escapeHtml(text) {
  return text.replace(
    /[&<>"']/g,
    (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch],
  );
}

/** Inline markdown on already-escaped text: `code`, **bold**, [text](link). */
function inlineMarkdown(escaped) {
  return escaped
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/\[([^\]]+)\]\(((?:https?:\/\/|\/|#)[^)\s]*)\)/g, '<a href="$2">$1</a>');
}

/** The small subset of CommonMark the document uses: paragraphs, "- " lists, inline marks. Input is escaped first. */
function markdown(text) {
  const container = h("div", { class: "description" });
  if (!text) return container;
  const html = text
    .split(/\n{2,}/)
    .map((block) => {
      const lines = block.split("\n");
      if (lines.every((line) => line.startsWith("- "))) {
        return `<ul>${lines.map((line) => `<li>${inlineMarkdown(escapeHtml(line.slice(2)))}</li>`).join("")}</ul>`;
      }
      return `<p>${inlineMarkdown(escapeHtml(block)).replace(/\n/g, "<br>")}</p>`;
    })
    .join("");
  container.innerHTML = html;
  return container;
}

/** One line of inline markdown (no paragraphs). */
function inlineView(text) {
  const span = h("span");
  span.innerHTML = inlineMarkdown(escapeHtml(text ?? ""));
  return span;
}

function slug(text) {
  return text.replace(/[^A-Za-z0-9]+/g, "-").replace(/^-|-$/g, "");
}

function operationAnchor(method, path, operation) {
  return `op-${operation.operationId ? slug(operation.operationId) : slug(`${method}-${path}`)}`;
}

function schemaAnchor(name) {
  return `schema-${slug(name)}`;
}

// ---------------------------------------------------------------------------------------------
// $ref resolution

function createResolver(spec) {
  return function resolve(value) {
    let current = value;
    const seen = new Set();
    while (current && typeof current === "object" && typeof current.$ref === "string") {
      const ref = current.$ref;
      if (seen.has(ref) || !ref.startsWith("#/")) break;
      seen.add(ref);
      current = ref
        .slice(2)
        .split("/")
        .map((token) => token.replace(/~1/g, "/").replace(/~0/g, "~"))
        .reduce((node, token) => (node ? node[token] : undefined), spec);
    }
    return current ?? {};
  };
}

function refName(ref) {
  return ref.split("/").pop();
}

// ---------------------------------------------------------------------------------------------
// Schemas

function typeLabel(schema) {
  if (!schema || typeof schema !== "object") return "any";
  if (schema.$ref) return refName(schema.$ref);
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(" | ");
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return alternatives.map(typeLabel).join(" | ");
  const type = Array.isArray(schema.type) ? schema.type.join(" | ") : schema.type;
  if (type === "array") return `array of ${typeLabel(schema.items)}`;
  if (type) return type;
  if (schema.properties) return "object";
  return "any";
}

function constraints(schema) {
  const out = [];
  if (!schema || typeof schema !== "object") return out;
  if (schema.format) out.push(`format: ${schema.format}`);
  if (schema.minimum !== undefined) out.push(`≥ ${schema.minimum}`);
  if (schema.maximum !== undefined) out.push(`≤ ${schema.maximum}`);
  if (schema.minLength !== undefined) out.push(`min length ${schema.minLength}`);
  if (schema.maxLength !== undefined) out.push(`max length ${schema.maxLength}`);
  if (schema.minItems !== undefined) out.push(`min items ${schema.minItems}`);
  if (schema.maxItems !== undefined) out.push(`max items ${schema.maxItems}`);
  if (schema.pattern !== undefined) out.push(`pattern: ${schema.pattern}`);
  if (schema.default !== undefined) out.push(`default: ${JSON.stringify(schema.default)}`);
  return out;
}

function typeCell(schema) {
  const cell = h("td", { class: "type-cell" });
  if (schema?.$ref) {
    cell.append(h("a", { class: "type", href: `#${schemaAnchor(refName(schema.$ref))}` }, refName(schema.$ref)));
  } else if (schema?.type === "array" && schema.items?.$ref) {
    cell.append(
      h("span", { class: "type" }, "array of "),
      h("a", { class: "type", href: `#${schemaAnchor(refName(schema.items.$ref))}` }, refName(schema.items.$ref)),
    );
  } else {
    cell.append(h("span", { class: "type" }, typeLabel(schema)));
  }
  const list = [...constraints(schema), ...(schema?.type === "array" ? constraints(schema.items) : [])];
  if (list.length > 0)
    cell.append(
      h(
        "div",
        {},
        list.map((text) => h("span", { class: "constraint" }, text)),
      ),
    );
  return cell;
}

/** Nested objects (inline, not $ref) are shown under their property, up to a few levels. */
function nestedObject(schema) {
  if (!schema || schema.$ref) return undefined;
  if (schema.properties) return schema;
  if (schema.type === "array" && schema.items?.properties) return schema.items;
  return undefined;
}

function schemaView(schema, resolve, depth = 0) {
  const box = h("div", { class: "schema-box" });
  if (!schema || typeof schema !== "object") return box;
  if (schema.description) box.append(markdown(schema.description));
  const alternatives = schema.oneOf ?? schema.anyOf;
  if (alternatives && !schema.properties) {
    box.append(h("p", {}, "One of:"));
    for (const alternative of alternatives) {
      if (alternative.$ref) {
        box.append(
          h(
            "div",
            {},
            h("a", { class: "type", href: `#${schemaAnchor(refName(alternative.$ref))}` }, refName(alternative.$ref)),
          ),
        );
      } else {
        box.append(schemaView(alternative, resolve, depth + 1));
      }
    }
    return box;
  }
  if (!schema.properties) {
    box.append(h("table", {}, h("tbody", {}, h("tr", {}, typeCell(schema)))));
    return box;
  }
  const required = new Set(schema.required ?? []);
  const rows = Object.entries(schema.properties).map(([name, property]) => {
    const description = h("td");
    if (property.description) description.append(markdown(property.description));
    const nested = nestedObject(property);
    if (nested && depth < 4) description.append(schemaView({ ...nested, description: undefined }, resolve, depth + 1));
    return h(
      "tr",
      {},
      h("td", { class: "name" }, name, required.has(name) ? h("span", { class: "required" }, "required") : null),
      typeCell(property),
      description,
    );
  });
  box.append(
    h(
      "table",
      {},
      h("thead", {}, h("tr", {}, h("th", {}, "Member"), h("th", {}, "Type"), h("th", {}, "Description"))),
      h("tbody", {}, rows),
    ),
  );
  return box;
}

function schemaReference(schema, resolve) {
  if (!schema) return null;
  if (schema.$ref) {
    const name = refName(schema.$ref);
    return h(
      "details",
      { class: "example" },
      h("summary", {}, "Schema: ", h("a", { href: `#${schemaAnchor(name)}` }, name)),
      schemaView(resolve(schema), resolve, 1),
    );
  }
  return schemaView(schema, resolve, 1);
}

// ---------------------------------------------------------------------------------------------
// Operations

function examplesView(mediaType, resolve) {
  const views = [];
  if (mediaType.example !== undefined) {
    views.push(exampleView("Example", mediaType.example));
  }
  for (const [name, raw] of Object.entries(mediaType.examples ?? {})) {
    const item = resolve(raw);
    views.push(exampleView(`Example: ${item.summary ?? name}`, item.value, item.description));
  }
  return views;
}

function exampleView(title, value, description) {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  return h(
    "details",
    { class: "example" },
    h("summary", {}, title),
    description ? markdown(description) : null,
    h("pre", {}, h("code", {}, text)),
  );
}

function contentView(content, resolve) {
  const views = [];
  for (const [type, mediaType] of Object.entries(content ?? {})) {
    views.push(h("div", { class: "media-type" }, type));
    views.push(schemaReference(mediaType.schema, resolve));
    views.push(...examplesView(mediaType, resolve));
  }
  return views;
}

function parametersView(parameters) {
  if (parameters.length === 0) return [];
  const rows = parameters.map((parameter) =>
    h(
      "tr",
      {},
      h(
        "td",
        { class: "name" },
        parameter.name,
        parameter.required ? h("span", { class: "required" }, "required") : null,
      ),
      h("td", {}, parameter.in),
      typeCell(parameter.schema),
      h(
        "td",
        {},
        markdown(parameter.description),
        parameter.example !== undefined
          ? h(
              "div",
              {},
              "Example: ",
              h(
                "code",
                {},
                typeof parameter.example === "string" ? parameter.example : JSON.stringify(parameter.example),
              ),
            )
          : null,
      ),
    ),
  );
  return [
    h("h4", {}, "Parameters"),
    h(
      "table",
      {},
      h(
        "thead",
        {},
        h("tr", {}, h("th", {}, "Name"), h("th", {}, "In"), h("th", {}, "Type"), h("th", {}, "Description")),
      ),
      h("tbody", {}, rows),
    ),
  ];
}

function headersView(headers, resolve) {
  const entries = Object.entries(headers ?? {});
  if (entries.length === 0) return null;
  return h(
    "table",
    {},
    h("thead", {}, h("tr", {}, h("th", {}, "Header"), h("th", {}, "Type"), h("th", {}, "Description"))),
    h(
      "tbody",
      {},
      entries.map(([name, raw]) => {
        const header = resolve(raw);
        return h(
          "tr",
          {},
          h("td", { class: "name" }, name),
          typeCell(header.schema),
          h("td", {}, markdown(header.description)),
        );
      }),
    ),
  );
}

function responsesView(responses, resolve) {
  return Object.entries(responses ?? {}).map(([status, raw]) => {
    const response = resolve(raw);
    const body = h("div", { class: "response-body" });
    const headers = headersView(response.headers, resolve);
    if (headers) body.append(h("h4", {}, "Headers"), headers);
    const content = contentView(response.content, resolve);
    if (content.length > 0) body.append(h("h4", {}, "Body"), ...content);
    if (!headers && content.length === 0) body.append(h("p", { class: "auth-note" }, "No headers or body."));
    return h(
      "details",
      { class: "response", "data-status": status },
      h("summary", {}, h("span", { class: `status status-${status[0]}` }, status), inlineView(response.description)),
      body,
    );
  });
}

/** The media type of the operation's first success response with a body (what to put in Accept). */
function successMediaType(operation, resolve) {
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    if (!status.startsWith("2")) continue;
    const type = Object.keys(resolve(response).content ?? {})[0];
    // JSON:API types keep their ext parameter; others drop theirs (a charset is not part of Accept).
    if (type) return type.startsWith("application/vnd.api+json") ? type : type.split(";")[0].trim();
  }
  return undefined;
}

const shellQuote = (text) => `'${text.replace(/'/g, "'\\''")}'`;

function curlExample(method, path, operation, resolve) {
  const origin = window.location.origin;
  const lines = [`curl -X ${method.toUpperCase()} '${origin}${path.replace(/\{guid\}/g, "<guid>")}'`];
  const secured = operation.security ? operation.security.length > 0 : true;
  if (secured) lines.push(`  -H "Authorization: Bearer $TOKEN"`);
  const accept = successMediaType(operation, resolve) ?? "application/vnd.api+json";
  const body = operation.requestBody ? resolve(operation.requestBody) : undefined;
  const [type, mediaType] = body ? (Object.entries(body.content ?? {})[0] ?? []) : [];
  if (type) {
    lines.push(`  -H 'Content-Type: ${type}'`, `  -H 'Accept: ${accept}'`);
    const first = Object.values(mediaType.examples ?? {})[0];
    const value = mediaType.example ?? (first ? resolve(first).value : undefined);
    // A text body (OPML) is sent as it is; a JSON one as JSON.
    if (typeof value === "string") lines.push(`  --data-binary ${shellQuote(value)}`);
    else if (value !== undefined) lines.push(`  --data '${JSON.stringify(value)}'`);
  } else if (secured) {
    lines.push(`  -H 'Accept: ${accept}'`);
  }
  return lines.join(" \\\n");
}

function operationView(spec, resolve, path, method, operation, pathParameters) {
  const anchor = operationAnchor(method, path, operation);
  const security = operation.security ?? spec.security ?? [];
  const schemes = security.flatMap((requirement) => Object.keys(requirement));
  const parameters = [...pathParameters, ...(operation.parameters ?? [])].map(resolve);
  const section = h(
    "section",
    {
      class: "operation",
      id: anchor,
      "data-method": method,
      "data-path": path,
      "data-search": `${method} ${path} ${operation.summary ?? ""} ${operation.operationId ?? ""}`.toLowerCase(),
    },
    h(
      "h3",
      { class: "operation-head" },
      h("span", { class: `method method-${method}` }, method.toUpperCase()),
      h("span", { class: "operation-path" }, path),
      h("span", { class: "operation-summary" }, operation.summary ?? ""),
    ),
    h(
      "p",
      { class: "auth-note" },
      schemes.length > 0 ? `Authentication: ${schemes.join(", ")} (bearer token).` : "No authentication.",
      operation.operationId ? ` Operation id: ${operation.operationId}.` : "",
    ),
    markdown(operation.description),
    parametersView(parameters),
  );
  if (operation.requestBody) {
    const body = resolve(operation.requestBody);
    section.append(
      h("h4", {}, body.required ? "Request body (required)" : "Request body"),
      ...contentView(body.content, resolve),
    );
  }
  section.append(h("h4", {}, "Responses"), ...responsesView(operation.responses, resolve));
  section.append(
    h(
      "details",
      { class: "example" },
      h("summary", {}, "curl"),
      h("pre", {}, h("code", {}, curlExample(method, path, operation, resolve))),
    ),
  );
  return section;
}

function collectOperations(spec) {
  const operations = [];
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    for (const method of METHODS) {
      if (item[method])
        operations.push({ path, method, operation: item[method], pathParameters: item.parameters ?? [] });
    }
  }
  return operations;
}

// ---------------------------------------------------------------------------------------------
// The page

function render(spec) {
  const resolve = createResolver(spec);
  const content = document.getElementById("content");
  const nav = document.getElementById("nav");
  content.replaceChildren();
  nav.replaceChildren();

  const info = spec.info ?? {};
  content.append(
    h("h1", {}, info.title ?? "API reference"),
    info.summary ? h("p", { class: "subtitle" }, info.summary) : null,
    h(
      "div",
      { class: "meta-line" },
      h("span", { class: "pill" }, `version ${info.version ?? "?"}`),
      h("span", { class: "pill" }, `OpenAPI ${spec.openapi}`),
      info.license ? h("span", { class: "pill" }, `license ${info.license.identifier ?? info.license.name}`) : null,
      h("a", { href: "/openapi.json" }, "Download openapi.json"),
    ),
    markdown(info.description),
  );

  const schemes = Object.entries(spec.components?.securitySchemes ?? {});
  if (schemes.length > 0) {
    content.append(h("h2", { id: "authentication" }, "Authentication"));
    for (const [name, scheme] of schemes) {
      content.append(
        h(
          "p",
          {},
          h("strong", {}, name),
          `: ${scheme.type}${scheme.scheme ? ` ${scheme.scheme}` : ""}${scheme.bearerFormat ? ` (${scheme.bearerFormat})` : ""}.`,
        ),
        markdown(scheme.description),
      );
    }
  }

  const operations = collectOperations(spec);
  const tags = [...(spec.tags ?? [])];
  for (const { operation } of operations) {
    for (const tag of operation.tags ?? ["Other"])
      if (!tags.some((known) => known.name === tag)) tags.push({ name: tag });
  }

  for (const tag of tags) {
    const tagged = operations.filter(({ operation }) => (operation.tags ?? ["Other"]).includes(tag.name));
    if (tagged.length === 0) continue;
    const tagAnchor = `tag-${slug(tag.name)}`;
    content.append(h("h2", { id: tagAnchor }, tag.name), markdown(tag.description));
    const links = [];
    for (const { path, method, operation, pathParameters } of tagged) {
      content.append(operationView(spec, resolve, path, method, operation, pathParameters));
      links.push(
        h(
          "li",
          { "data-search": `${method} ${path} ${operation.summary ?? ""}`.toLowerCase() },
          h(
            "a",
            { href: `#${operationAnchor(method, path, operation)}`, title: operation.summary ?? "" },
            h("span", { class: `method method-${method}` }, method.toUpperCase()),
            h("span", { class: "nav-path" }, path),
          ),
        ),
      );
    }
    nav.append(h("li", {}, h("div", { class: "nav-group" }, tag.name), h("ul", {}, links)));
  }

  const schemas = Object.entries(spec.components?.schemas ?? {});
  if (schemas.length > 0) {
    content.append(h("h2", { id: "schemas" }, "Schemas"));
    for (const [name, schema] of schemas) {
      content.append(h("h3", { id: schemaAnchor(name), class: "mono" }, name), schemaView(schema, resolve));
    }
    nav.append(
      h(
        "li",
        {},
        h("div", { class: "nav-group" }, "Schemas"),
        h(
          "ul",
          {},
          schemas.map(([name]) =>
            h(
              "li",
              { "data-search": name.toLowerCase() },
              h("a", { href: `#${schemaAnchor(name)}` }, h("span", { class: "nav-path" }, name)),
            ),
          ),
        ),
      ),
    );
  }

  const filter = document.getElementById("filter");
  filter.addEventListener("input", () => {
    const query = filter.value.trim().toLowerCase();
    for (const element of document.querySelectorAll("[data-search]")) {
      element.hidden = query !== "" && !element.dataset.search.includes(query);
    }
  });

  if (window.location.hash) document.getElementById(window.location.hash.slice(1))?.scrollIntoView();
  document.body.dataset.rendered = "true";
}

async function main() {
  const status = document.getElementById("status");
  try {
    const response = await fetch("/openapi.json", { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`GET /openapi.json answered ${response.status}`);
    render(await response.json());
  } catch (error) {
    status.className = "error";
    status.textContent = `Could not load the OpenAPI document: ${error.message}`;
    document.body.dataset.rendered = "error";
  }
}

main();
