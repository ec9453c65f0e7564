// BatonError: every failure of the package, with `code` naming the kind.

import native from './native.js';

/**
 * The kind of a {@link BatonError}, the same names in every language of baton: the core's
 * error kinds, whose values {@link errorCodes} reads from the addon (this union is their
 * type for callers, the one place TypeScript needs them spelled out).
 */
export type BatonErrorCode =
  | 'InvalidArgument'
  | 'InvalidUrl'
  | 'Timeout'
  | 'NotHeld'
  | 'LockLost'
  | 'Connection'
  | 'Backend'
  | 'Closed'
  | 'Unsupported';

/** Every {@link BatonErrorCode}, in the core's declaration order (read from the addon). */
export const errorCodes: readonly BatonErrorCode[] = Object.freeze(native._errorKinds() as BatonErrorCode[]);

/** A native rejection's `code` is its kind's name (see src/errors.rs). */
const KNOWN = new Set<string>(errorCodes);
/** napi's own argument-conversion failures: a value of the wrong type was passed. */
const NAPI_TYPE_CODES = new Set([
  'InvalidArg',
  'ObjectExpected',
  'StringExpected',
  'NameExpected',
  'FunctionExpected',
  'NumberExpected',
  'BooleanExpected',
  'ArrayExpected',
  'BigintExpected',
]);

/** The error of every failed baton call; `code` says what went wrong. */
export class BatonError extends Error {
  /** What went wrong, e.g. `'Timeout'` or `'LockLost'`. */
  readonly code: BatonErrorCode;

  constructor(code: BatonErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'BatonError';
    this.code = code;
  }

  /** Converts an error thrown by the native addon into a BatonError (others pass through unchanged). */
  static from(e: unknown): BatonError {
    if (e instanceof BatonError) return e;
    const { code, message } = (e ?? {}) as { code?: unknown; message?: unknown };
    const text = typeof message === 'string' ? message : String(e);
    if (typeof code === 'string' && KNOWN.has(code)) return new BatonError(code as BatonErrorCode, text);
    if (typeof code === 'string' && NAPI_TYPE_CODES.has(code)) {
      return new BatonError('InvalidArgument', text, { cause: e });
    }
    return new BatonError('Backend', `internal error: ${text}`, { cause: e });
  }
}

/** An InvalidArgument error for input the facade rejects before any native call. */
export function invalid(message: string): BatonError {
  return new BatonError('InvalidArgument', message);
}
