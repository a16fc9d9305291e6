/** The media types of OPML import and export (docs/API.md §11). */

export const OPML_MEDIA_TYPE = "text/x-opml";

/** What the export is sent as. */
export const OPML_CONTENT_TYPE = `${OPML_MEDIA_TYPE}; charset=utf-8`;

/** `Accept` ranges under which the export is served; any other range alone answers 406. */
export const OPML_ACCEPT_RANGES: readonly string[] = ["*/*", "text/*", OPML_MEDIA_TYPE, "application/xml", "text/xml"];

/** Request body types the import takes: OPML's own, the generic XML types, and any `+xml` type. */
export function isXmlMediaType(essence: string): boolean {
  return (
    essence === OPML_MEDIA_TYPE || essence === "application/xml" || essence === "text/xml" || essence.endsWith("+xml")
  );
}

/** A charset or XML encoding name that means UTF-8 (the only encoding the import takes). */
export function isUtf8Label(label: string): boolean {
  return /^utf-?8$/i.test(label.trim());
}
