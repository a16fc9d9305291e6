/**
 * A response body written page by page (the OPML export, the gpodder lists): a page is read only when the
 * reader asks for more (`highWaterMark: 0`), so what the isolate holds is one page of rows and its text,
 * however large the account. `onError` sees a failure after the response started; the body then ends early,
 * without its tail, so the reader never takes a cut document for a whole one.
 */
export function pagedTextStream<T>(
  pages: AsyncIterator<T>,
  text: { head: string; page: (page: T) => string; tail: () => string },
  onError: (err: unknown) => void,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let headWritten = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!headWritten) {
          headWritten = true;
          if (text.head !== "") {
            controller.enqueue(encoder.encode(text.head));
            return;
          }
        }
        // A page may have nothing to say (a filter left none of its rows): read on, never enqueue nothing.
        for (;;) {
          let page: IteratorResult<T>;
          try {
            page = await pages.next();
          } catch (err) {
            onError(err);
            throw err;
          }
          if (page.done) {
            const tail = text.tail();
            if (tail !== "") controller.enqueue(encoder.encode(tail));
            controller.close();
            return;
          }
          const written = text.page(page.value);
          if (written !== "") {
            controller.enqueue(encoder.encode(written));
            return;
          }
        }
      },
      async cancel() {
        await pages.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}

/** The pages again from the start, with the first one already read (so a failing first read is still an error response). */
export async function* withFirst<T>(
  first: IteratorResult<T, void>,
  rest: AsyncIterator<T, void>,
): AsyncGenerator<T, void> {
  if (first.done) return;
  yield first.value;
  for (;;) {
    const next = await rest.next();
    if (next.done) return;
    yield next.value;
  }
}
