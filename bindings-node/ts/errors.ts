// BatonError: every failure of the package, with `code` naming the kind (the same kind
// names as the core's `ErrorKind` and every other language's binding).

/** The kind of a {@link BatonError}, the same names in every language of baton. */
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

/** Every {@link BatonErrorCode}, in the core's declaration order. */
export const errorCodes: readonly BatonErrorCode[] = Object.freeze([
  'InvalidArgument',
  'InvalidUrl',
  'Timeout',
  'NotHeld',
  'LockLost',
  'Connection',
  'Backend',
  'Closed',
  'Unsupported',
] as const);

const KNOWN = new Set<string>(errorCodes);
/** The native rejection carries the kind as the message prefix (see src/errors.rs). */
const NATIVE = /^([A-Za-z]+): ([\s\S]*)$/;
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
    if (code === 'GenericFailure') {
      const m = NATIVE.exec(text);
      if (m && KNOWN.has(m[1]!)) return new BatonError(m[1] as BatonErrorCode, m[2]!);
    }
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
