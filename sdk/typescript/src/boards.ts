// Boards (issue 31, docs/boards.md): shared memory that agents read and write only by grant.
import type { Transport } from "./http.js";
import type { BoardRead, BoardWriteResult, JsonValue, LeaseInfo } from "./types.js";

/** `Symbol.asyncDispose` where the runtime has it (for `await using`), else a registered symbol. */
const asyncDispose: symbol = (Symbol as unknown as { asyncDispose?: symbol }).asyncDispose ?? Symbol.for("Symbol.asyncDispose");

/**
 * One board of the key's space: `get()` reads it, `put(body, ifVersion)` writes the fields of
 * `body` at the version read (an older version is merged field by field by the type's conflict
 * rules; `settled` names the rule of each field). Needs a grant (403 board_grant_required);
 * a 412 `board_conflict` is an AgentMemoryError: get and retry.
 */
export class BoardHandle {
  constructor(
    private readonly http: () => Transport,
    readonly type: string,
    readonly id: string,
  ) {}

  async get(): Promise<BoardRead> {
    return (await this.http().request<BoardRead>("POST", "/v1/boards/read", { body: { type: this.type, id: this.id } })).data;
  }

  put(body: { [field: string]: JsonValue }, ifVersion: number): Promise<BoardWriteResult> {
    return this.write(body, ifVersion, undefined);
  }

  /** @internal */
  async write(body: { [field: string]: JsonValue }, ifVersion: number, lease: BoardLease | undefined): Promise<BoardWriteResult> {
    const req: { [m: string]: JsonValue } = { type: this.type, id: this.id, if_version: ifVersion, body };
    if (lease) req.lease = { lease_id: lease.leaseId, token: lease.token };
    return (await this.http().request<BoardWriteResult>("PUT", "/v1/boards", { body: req })).data;
  }

  /**
   * Acquires a lease for `ttlSeconds` (1..3600): one handler at a time, with a fencing token.
   * `await using lease = await board.lease(30)` releases it when the block ends (or call
   * `release()`); 409 `lease_held` while another handler holds one.
   */
  async lease(ttlSeconds = 30): Promise<BoardLease> {
    const l = (await this.http().request<LeaseInfo>("POST", "/v1/boards/lease", { body: { type: this.type, id: this.id, ttl_seconds: ttlSeconds } })).data;
    return new BoardLease(this, this.http, l);
  }
}

/** A lease on a board; `put` writes carrying it (409 `lease_lost` once it is no longer in force). */
export class BoardLease {
  readonly leaseId: string;
  readonly token: number;
  expiresAt: string;

  constructor(
    private readonly board: BoardHandle,
    private readonly http: () => Transport,
    l: LeaseInfo,
  ) {
    this.leaseId = l.lease_id;
    this.token = l.token;
    this.expiresAt = l.expires_at;
  }

  put(body: { [field: string]: JsonValue }, ifVersion: number): Promise<BoardWriteResult> {
    return this.board.write(body, ifVersion, this);
  }

  private proof(extra: { [m: string]: JsonValue } = {}): { [m: string]: JsonValue } {
    return { type: this.board.type, id: this.board.id, lease_id: this.leaseId, token: this.token, ...extra };
  }

  async renew(ttlSeconds = 30): Promise<void> {
    this.expiresAt = (await this.http().request<LeaseInfo>("POST", "/v1/boards/lease/renew", { body: this.proof({ ttl_seconds: ttlSeconds }) })).data.expires_at;
  }

  async release(): Promise<void> {
    await this.http().request<LeaseInfo>("POST", "/v1/boards/lease/release", { body: this.proof() });
  }

  /** Releases the lease at the end of an `await using` block; a lease already lost is no error. */
  async [asyncDispose](): Promise<void> {
    try {
      await this.release();
    } catch (e) {
      if ((e as { code?: string }).code !== "lease_lost") throw e;
    }
  }
}

/**
 * A board of another space read through a bridge (docs/boards.md "Bridges"): read only.
 * Without a bridge both spaces approved that lists this agent and the board, and for a board
 * never written, `get()` rejects with an AgentMemoryError 404 `board_not_found`, the same
 * answer as for a space that does not exist.
 */
export class BridgedBoardHandle {
  constructor(
    private readonly http: () => Transport,
    readonly space: string,
    readonly type: string,
    readonly id: string,
  ) {}

  async get(): Promise<BoardRead> {
    return (await this.http().request<BoardRead>("POST", "/v1/boards/read", { body: { type: this.type, id: this.id, space: this.space } })).data;
  }
}
