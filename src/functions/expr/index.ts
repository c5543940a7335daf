/**
 * The expression engine shared by BandArithmetic, CreateColorComposite, RasterCalculator and
 * Local: user text -> tokens -> AST (parse.ts, allowlist grammar, bounded) -> IR with names bound,
 * constants folded and common sub-expressions shared (compile.ts) -> a register program run
 * block-wise over typed arrays (evaluate.ts). No user text is ever evaluated as JavaScript.
 */
import { invalidArgument, type EngineError } from '../../core/errors.js';
import { bindExpression, type BindOptions, type ExprBuilder, type IrNode } from './compile.js';
import { ExprError, parseExpression, type Dialect } from './parse.js';

export { compileProgram, ExprBuilder, type IrNode, type Program } from './compile.js';
export { runProgram, type SlotSource } from './evaluate.js';
export { FUNCTION_NAMES, localOp, LOCAL_CODES, Op, type LocalOp, type OpCode } from './ops.js';
export { ExprError, LIMITS, parseExpression } from './parse.js';

/** INVALID_ARGUMENT at `path` for an expression problem, with its position and a short excerpt. */
export function expressionError(path: string, text: string, e: ExprError): EngineError {
  const from = Math.max(0, e.pos - 15);
  const excerpt = text.slice(from, e.pos + 15).replace(/[^\x20-\x7e]/g, '?');
  const near = excerpt.trim() === '' ? '' : `, near "${from > 0 ? '...' : ''}${excerpt}${e.pos + 15 < text.length ? '...' : ''}"`;
  return invalidArgument(path, `${e.message} (at position ${e.pos}${near})`);
}

/**
 * Parse and bind one user expression; every problem becomes INVALID_ARGUMENT at `path` naming the
 * 0-based character position.
 */
export function bindUserExpression(
  text: string,
  builder: ExprBuilder,
  options: BindOptions & { readonly dialect: Dialect },
  path: string,
): IrNode {
  try {
    return bindExpression(parseExpression(text, options.dialect), builder, options);
  } catch (e) {
    if (e instanceof ExprError) throw expressionError(path, text, e);
    // A RangeError (stack) must never happen thanks to the limits; report it cleanly if it does.
    if (e instanceof RangeError) throw invalidArgument(path, `expression is too complex (${e.message})`);
    throw e;
  }
}
