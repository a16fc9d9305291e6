import { MAX_STORED_SUBSCRIPTIONS } from "../db/subscriptions";
import type { ErrorObject } from "../jsonapi";
import { MAX_BODY_BYTES, MAX_OPML_FEEDS } from "../limits";
import {
  bodyTooLarge,
  COMMON_BAD_REQUEST,
  commonBadRequestExamples,
  EXAMPLE_TIME,
  errorContent,
  example,
  exampleErrors,
  FEEDS,
  type Json,
  jsonApiContent,
  media415,
  problem,
  schemaRef,
  stored,
  successHeaders,
  v1Headers,
  v1Parameters,
  v1Responses,
} from "../openapi/components";
import { isXmlMediaType, OPML_ACCEPT_RANGES, OPML_CONTENT_TYPE, OPML_MEDIA_TYPE } from "../opml/media-types";
import { parseOpml } from "../opml/parse";
import { serialiseOpml } from "../opml/serialise";
import { parseSubscriptionResource, SUBSCRIPTION_TYPE } from "../resources/subscription";

// OPML: the examples come from the import's own parser and validator and the export's serialiser.

const OPML_PATH = "/v1/subscriptions.opml";
const OPML_REQUEST_TYPES = [OPML_MEDIA_TYPE, "application/xml", "text/xml"];
if (!OPML_REQUEST_TYPES.every(isXmlMediaType)) throw new Error("a documented OPML request type is refused");

const exportExample = serialiseOpml([stored(0), stored(1)], new Date(EXAMPLE_TIME));

const INVALID_FEED_URL = "feeds.example.net/no-scheme.xml";
const importRequestExample = [
  '<?xml version="1.0" encoding="UTF-8"?>',
  '<opml version="2.0">',
  "  <head><title>Exported from another app</title></head>",
  "  <body>",
  '    <outline text="News">',
  `      <outline type="rss" text="Podcasting 2.0" xmlUrl="${FEEDS[0].feedUrl}"/>`,
  "    </outline>",
  `    <outline type="rss" text="The Daily Byte" xmlUrl="${FEEDS[1].feedUrl}" guid="${FEEDS[1].guid}"/>`,
  `    <outline type="rss" text="Broken" xmlUrl="${INVALID_FEED_URL}"/>`,
  "  </body>",
  "</opml>",
].join("\n");
if (parseOpml(new TextEncoder().encode(importRequestExample).buffer as ArrayBuffer).length !== 3) {
  throw new Error("the OPML import example does not parse to three feeds");
}

/** The reason an import gives for skipping an outline: the JSON endpoints' feedUrl validator's detail. */
function skippedReason(xmlUrl: string): string {
  const resource = { type: SUBSCRIPTION_TYPE, id: FEEDS[0].guid, attributes: { feedUrl: xmlUrl } };
  const result = parseSubscriptionResource(resource, "");
  if (result.ok) throw new Error(`example xmlUrl ${xmlUrl} is valid`);
  return result.error.detail;
}

const importResultExample = {
  jsonapi: { version: "1.1" },
  meta: {
    imported: 1,
    alreadySubscribed: 1,
    skipped: [{ xmlUrl: INVALID_FEED_URL, reason: skippedReason(INVALID_FEED_URL) }],
  },
};

/** The error the import's parser answers for `opml`. */
function opmlError(opml: string | Uint8Array): ErrorObject {
  const bytes = typeof opml === "string" ? new TextEncoder().encode(opml) : opml;
  try {
    parseOpml(bytes.buffer as ArrayBuffer);
  } catch (error) {
    if (error instanceof Error && "errors" in error) return (error as { errors: ErrorObject[] }).errors[0];
    throw error;
  }
  throw new Error("example OPML is accepted");
}

const tooManyFeedsOpml = `<opml><body>${'<outline xmlUrl="https://feeds.example.com/x.xml"/>'.repeat(MAX_OPML_FEEDS + 1)}</body></opml>`;

/**
 * An OPML document as the import takes it and the export gives it: XML text in UTF-8 whose root element is
 * `<opml>` (after an optional byte-order mark, XML declaration, comments and processing instructions).
 */
const opmlDocumentSchema = {
  type: "string",
  description: `An OPML 1.0 or 2.0 document, in UTF-8: XML whose root element is \`<opml>\`. The import reads every \`outline\` with an \`xmlUrl\` (or, without one, a \`url\`) attribute; the export writes one \`<outline type="rss" text xmlUrl guid/>\` per subscription.`,
  pattern: "<opml[\\s/>]",
};

/** OpenAPI: OPML export and import (routes/opml.ts). */
export const opmlPaths: Record<string, Json> = {
  [OPML_PATH]: {
    get: {
      operationId: "exportOpml",
      tags: ["OPML"],
      summary: "Export subscriptions as OPML",
      description: `The authenticated user's active subscriptions as an OPML 2.0 document, in list order: a \`<head>\` with a \`<title>\` and \`<dateCreated>\` (RFC 822), and one \`<outline type="rss" text xmlUrl guid/>\` per subscription, XML-escaped. The \`guid\` attribute is the subscription's id, so importing the file elsewhere maps each feed to the same resource. Takes no query parameters (names JSON:API reserves answer 400). One database read.`,
      parameters: v1Parameters,
      responses: {
        "200": {
          description: "The OPML document.",
          headers: successHeaders,
          content: {
            [OPML_CONTENT_TYPE]: { schema: opmlDocumentSchema, example: exportExample },
          },
        },
        "400": {
          description: COMMON_BAD_REQUEST,
          headers: v1Headers,
          content: errorContent({
            ...commonBadRequestExamples,
          }),
        },
        ...v1Responses,
        "406": {
          description: `\`Accept\` allows none of ${OPML_ACCEPT_RANGES.map((range) => `\`${range}\``).join(", ")} (an absent \`Accept\` is fine). The error is a JSON:API document.`,
          headers: v1Headers,
          content: errorContent({
            json: example(
              "Accept: application/json",
              exampleErrors(
                problem(
                  406,
                  "Not acceptable",
                  `This endpoint answers ${OPML_MEDIA_TYPE}; accept ${OPML_ACCEPT_RANGES.join(", ")}.`,
                  { source: { header: "Accept" } },
                ),
              ),
            ),
          }),
        },
      },
    },
    post: {
      operationId: "importOpml",
      tags: ["OPML"],
      summary: "Import subscriptions from OPML",
      description: `Subscribes the authenticated user to every \`outline\` with an \`xmlUrl\` attribute, or a \`url\` attribute (older exporters) when it has no \`xmlUrl\`, at any depth (merge: nothing is removed). The URL is trimmed of surrounding ASCII space, tab, CR and LF; \`meta.skipped\` reports it as in the file. Each outline is subscribed like \`POST /v1/subscriptions\`, with the outline's \`guid\` attribute as the id when it is a UUID, else the feed's podcast:guid (a UUIDv5 in the namespace \`ead4c236-bf58-58c6-a2c6-a6b28d128cb6\` of the \`xmlUrl\` without its scheme and trailing slashes). Outlines whose URL \`POST /v1/subscriptions\` would refuse are skipped, with the reason; so are the feeds past the user's quota of ${MAX_STORED_SUBSCRIPTIONS} stored subscriptions (the import stops adding there). Send the document as \`${OPML_MEDIA_TYPE}\`, \`application/xml\`, \`text/xml\` or any \`+xml\` type, in UTF-8 (a file declaring another encoding, or in UTF-16, answers 400 naming the encoding to convert from), at most ${MAX_BODY_BYTES / 1024 / 1024} MiB and ${MAX_OPML_FEEDS} feeds. A DOCTYPE (and so any entity declaration) is refused, never processed. All subscriptions are written in one database transaction: on 503 nothing was written, and retrying is safe.`,
      parameters: v1Parameters,
      requestBody: {
        required: true,
        content: Object.fromEntries(
          OPML_REQUEST_TYPES.map((type) => [
            type,
            {
              schema: opmlDocumentSchema,
              examples: { opml: example("Three feeds, one nested, one with a guid", importRequestExample) },
            },
          ]),
        ),
      },
      responses: {
        "200": {
          description:
            "What the import did: `imported` (new or revived subscriptions), `alreadySubscribed` (before the import, or by an earlier outline of the same file), and the outlines `skipped` with the reason.",
          headers: successHeaders,
          content: jsonApiContent(schemaRef("OpmlImportDocument"), {
            imported: example(
              "One imported, one already subscribed, one skipped",
              importResultExample,
              "The response to the request example, for a user already subscribed to The Daily Byte.",
            ),
          }),
        },
        "400": {
          description: `The document is not valid UTF-8, it is in another encoding (named in the detail, to convert from), it has a DOCTYPE, it is not well-formed XML, or its root element is not \`<opml>\`. ${COMMON_BAD_REQUEST}`,
          headers: v1Headers,
          content: errorContent({
            ...commonBadRequestExamples,
            malformed: example(
              "Not well-formed",
              exampleErrors(opmlError('<opml><body><outline xmlUrl="https://a.example/f"></body></opml>')),
            ),
            notOpml: example("Not OPML", exampleErrors(opmlError('<rss version="2.0"/>'))),
            doctype: example(
              "A DOCTYPE (an entity declaration)",
              exampleErrors(opmlError('<!DOCTYPE opml [<!ENTITY a "b">]><opml/>')),
            ),
            encoding: example(
              "Another encoding",
              exampleErrors(opmlError('<?xml version="1.0" encoding="ISO-8859-1"?><opml/>')),
            ),
            utf8: example("Invalid UTF-8", exampleErrors(opmlError(new Uint8Array([0x3c, 0xe9, 0x3e])))),
          }),
        },
        "413": {
          description: `More than ${MAX_OPML_FEEDS} outlines with an \`xmlUrl\` (valid or not; nothing is written), or a body over ${MAX_BODY_BYTES / 1024 / 1024} MiB.`,
          headers: v1Headers,
          content: errorContent({
            tooMany: example("Too many feeds", exampleErrors(opmlError(tooManyFeedsOpml))),
            tooLarge: example("Body too large", exampleErrors(bodyTooLarge)),
          }),
        },
        "415": {
          description: `The body is not sent as \`${OPML_MEDIA_TYPE}\`, \`application/xml\`, \`text/xml\` or a \`+xml\` type, or names a \`charset\` other than UTF-8.`,
          headers: v1Headers,
          content: errorContent({
            json: example(
              "Sent as application/json",
              media415(`Send the OPML document as ${OPML_MEDIA_TYPE}, application/xml or text/xml.`),
            ),
            charset: example("Another charset", media415("OPML documents are taken in UTF-8 only.")),
          }),
        },
        ...v1Responses,
      },
    },
  },
};
