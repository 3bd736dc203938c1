/**
 * Where writes wait while the service is unreachable: in memory (the default) or in a JSON
 * file the caller names (`ClientOptions.queueFile`), so they survive a restart of the agent's
 * process. The file holds `[{"request": <StateWrite>}, ...]`, the Go SDK's format.
 *
 * @module
 */
import type { StateWrite } from "./types.js";

/** One write waiting to be resent, exactly as it will be sent (same `if_version`). */
export interface QueuedWrite {
  request: StateWrite;
}

/** Keeps the queue of writes; `load` runs once when the client is built, `save` after every change. */
export interface QueueStore {
  load(): Promise<QueuedWrite[]>;
  save(queue: readonly QueuedWrite[]): Promise<void>;
}

/** A queue kept in memory only: lost when the process ends. */
export function memoryQueue(): QueueStore {
  return { load: async () => [], save: async () => {} };
}

/**
 * A queue kept in the JSON file at `path` (Node, Deno and Bun: it loads `node:fs/promises`
 * when first used). Written atomically (a temporary file renamed over it), mode 0600. A file
 * that does not exist is an empty queue; one that is not a queue fails the client's calls
 * with an `Error` naming the file.
 */
export function fileQueue(path: string): QueueStore {
  type Fs = {
    readFile(p: string, enc: "utf8"): Promise<string>;
    writeFile(p: string, data: string, opt: { mode: number }): Promise<void>;
    rename(a: string, b: string): Promise<void>;
  };
  let fsP: Promise<Fs> | undefined;
  const fs = (): Promise<Fs> => {
    const spec = "node:fs/promises";
    fsP ??= import(spec) as Promise<Fs>;
    return fsP;
  };
  return {
    async load() {
      let text: string;
      try {
        text = await (await fs()).readFile(path, "utf8");
      } catch (err) {
        if ((err as { code?: string }).code === "ENOENT") return [];
        throw new Error(`agentmemory: cannot read the queue file ${path}`);
      }
      if (text.trim() === "" || text.trim() === "null") return [];
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new Error(`agentmemory: the queue file ${path} is not JSON`);
      }
      if (!Array.isArray(parsed) || !parsed.every((q) => q && typeof q === "object" && typeof q.request === "object")) {
        throw new Error(`agentmemory: the queue file ${path} is not a queue`);
      }
      return parsed as QueuedWrite[];
    },
    async save(queue) {
      const f = await fs();
      const tmp = path + ".tmp";
      await f.writeFile(tmp, JSON.stringify(queue), { mode: 0o600 });
      await f.rename(tmp, path);
    },
  };
}
