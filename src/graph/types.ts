/**
 * The contract between the engine and a raster function: a declarative argument schema, a `plan`
 * run once per node (all checks, output info, halo, kernel parameters) and a pure synchronous
 * `kernel` run once per tile.
 */
import type { BandStatistics, Histogram, PixelBlock, RasterInfo } from '../core/pixel-block.js';
import type { Rect } from '../core/rect.js';
import type { PixelType } from '../core/pixel-type.js';

// ---- Arguments: one declarative schema drives parsing, defaults, docs and introspection.

interface Common {
  readonly doc: string;
  /** Other wire spellings accepted for this argument (matched case-insensitively, like the name). */
  readonly aliases?: readonly string[];
}

export type ArgSpec = Common &
  (
    | { readonly kind: 'number' | 'int'; readonly default?: number; readonly min?: number; readonly max?: number }
    | {
        readonly kind: 'enum';
        readonly values: readonly number[];
        /** Names accepted instead of the codes (case-insensitive), e.g. `{ mean: 3 }`. */
        readonly names?: Readonly<Record<string, number>>;
        readonly default?: number;
      }
    | { readonly kind: 'boolean'; readonly default?: boolean }
    | {
        readonly kind: 'string';
        readonly values?: readonly string[];
        /**
         * With `values`: the numeric codes clients send instead of the names (the vendor's clients
         * write unit and renderer enums as codes), code -> value.
         */
        readonly codes?: Readonly<Record<number, string>>;
        /** With `values`: other spellings of a value (the JS client's style keys), spelling -> value. */
        readonly names?: Readonly<Record<string, string>>;
        readonly default?: string;
      }
    | {
        /** A list of numbers: a JSON array, or a string of numbers separated by spaces or commas. */
        readonly kind: 'numbers';
        readonly default?: readonly number[];
        readonly minLength?: number;
        readonly integer?: boolean;
      }
    | { readonly kind: 'strings'; readonly default?: readonly string[] }
    /** Any JSON value (object, array); `plan` checks its shape. */
    | { readonly kind: 'json'; readonly optional?: boolean }
    | {
        /** One raster: `$$`, `$n`, `$<id>`, a nested rule, `{ url }`; with `scalar`, also numbers. */
        readonly kind: 'raster';
        /** `'$$'`: absent means the service raster. Without it the argument is required unless `optional`. */
        readonly default?: '$$';
        readonly optional?: boolean;
        readonly scalar?: boolean;
      }
    | {
        readonly kind: 'rasters';
        readonly minLength?: number;
        readonly scalar?: boolean;
        /** `'$$'`: an absent or empty list means `["$$"]` (Local, as the vendor client). */
        readonly default?: '$$';
      }
  );

export type ArgSchema = Readonly<Record<string, ArgSpec>>;

type ValueOf<S> = S extends { kind: 'enum'; values: readonly (infer V)[] }
  ? V
  : S extends { kind: 'number' | 'int' }
    ? number
    : S extends { kind: 'boolean' }
      ? boolean
      : S extends { kind: 'string' }
        ? string
        : S extends { kind: 'numbers' }
          ? readonly number[]
          : S extends { kind: 'strings' }
            ? readonly string[]
            : S extends { kind: 'json' }
              ? unknown
              : S extends { kind: 'raster' }
                ? number
                : S extends { kind: 'rasters' }
                  ? readonly number[]
                  : never;

/**
 * Parsed, defaulted argument values. Raster arguments are not pixel values: they hold the index
 * of their input in the `inputs` given to `plan` and `kernel` (`inputs[a.DEM]`), and a `Rasters`
 * array holds one index per element. Always-present: defaults, required rasters, `$$`-defaulted
 * rasters and raster arrays.
 */
export type ArgValues<A extends ArgSchema> = {
  readonly [K in keyof A]: A[K] extends { default: unknown } | { kind: 'rasters' }
    ? ValueOf<A[K]>
    : A[K] extends { kind: 'raster' }
      ? A[K] extends { optional: true }
        ? number | undefined
        : number
      : ValueOf<A[K]> | undefined;
};

// ---- Functions: plan once per node, run the kernel once per tile.

export interface Plan<P> {
  /** Output description, derived from inputs and arguments without touching pixels. */
  readonly info: RasterInfo;
  /** Extra pixels needed on every side of the requested rectangle, from every input. */
  readonly halo: number;
  /**
   * The input rectangle needed for output rectangle `out` from input `input`, when it is not `out`
   * grown by `halo`: grid changes (Resample, Geometric) and functions that need more context than
   * a fixed halo (ElevationVoidFill with no width limit reads its whole input). Must depend only on
   * `out`, so tiles stay independent. Kernels find where their inputs start in `block.rect`.
   */
  readonly inputRect?: (out: Rect, input: number) => Rect;
  /** Precomputed, structured-cloneable kernel parameters. */
  readonly params: P;
  /**
   * Statistics this node needs from some inputs over the whole request (Stretch with DRA,
   * Threshold): before the first tile the engine runs a pre-pass (graph/request-statistics.ts)
   * over the node's request rectangle (the render area mapped down through its ancestors' halos and
   * inputRects, NOT grown by this node's own halo; `inputRect(R, i)` when the node has one), or over
   * `rect` when given, computes per-band statistics and histograms of the listed inputs from their
   * valid pixels, and calls `fn.bindStatistics` once. The result does not depend on the tile size
   * or the worker count. Bound copies of the node no longer carry this field.
   */
  readonly requestStatistics?: RequestStatistics;
  /**
   * Inputs to resample onto this node's output grid (`info`: extent, cell size, spatial
   * reference) before the kernel sees them; one entry per input, `undefined` = use as is. The
   * engine wraps each listed input in an alignment node, so kernels always get aligned blocks.
   */
  readonly align?: readonly (AlignSpec | undefined)[];
  /**
   * Warnings about arguments that were accepted but have no effect (reported, never thrown). The
   * builder adds them to its warnings at the node's arguments, or at the argument `arg` names.
   */
  readonly warnings?: readonly (string | PlanWarning)[];
}

export interface PlanWarning {
  readonly message: string;
  /** The argument the warning is about (canonical name), for its JSON path. */
  readonly arg?: string;
}

export interface RequestStatistics {
  /** Input indexes whose statistics are needed. */
  readonly inputs: readonly number[];
  /** Histogram bins per band (default 256; 8-bit inputs always get one bin per value). */
  readonly bins?: number;
  /** Take statistics from this fixed rectangle of the node's grid instead of the request (DRA from extent); clipped to the input's grid. */
  readonly rect?: Rect;
}

/** Statistics of one band of an input over the request, from its valid (mask 1, finite) pixels. */
export interface RequestBandStatistics {
  /** min, max, mean, population stdDev, count; median and mode as bin centres (exact values for 8/16-bit data). */
  readonly statistics: BandStatistics;
  readonly histogram: Histogram;
}

export type ResamplingMethod = 'nearest' | 'bilinear' | 'cubic';

export interface AlignSpec {
  /** Nearest for thematic data, bilinear otherwise (spec §1.5), unless the function says. */
  readonly method: ResamplingMethod;
}

export interface RasterFunction<A extends ArgSchema = ArgSchema, P = unknown> {
  /** Wire name as it appears in `rasterFunction`, e.g. `Slope`. */
  readonly name: string;
  readonly aliases?: readonly string[];
  /** One line for listings. */
  readonly summary: string;
  /** Name of the raster argument a template binds to; `Raster` unless stated. */
  readonly variableName?: string;
  /**
   * Recast: arguments outside `args` are not unknown but overrides, which the rule builder applies
   * by name to the arguments and template variables of the chain under the raster arguments.
   */
  readonly nestedOverrides?: boolean;
  /** Family folder, for listings (`terrain`, `bands`, `local`, ...). */
  readonly family: string;
  /** How the function was verified, for the README table: `reference` (an outside tool), `hand` (hand-derived values). */
  readonly verification: string;
  readonly args: A;
  /**
   * Check cross-argument rules and input shapes; throw `EngineError` here, never in `kernel`.
   *
   * `to` is the rule's `outputPixelType` for this function (undefined for `UNKNOWN` or absent):
   * the function's own output type, not a conversion after it. A function that computes through
   * floating point plans `info.pixelType = to` and its kernel rounds, clamps or masks into that
   * type as its spec says (Convolution clamps, Local turns out-of-range values into NoData). A
   * function whose values are what they are in any type (band copies, class codes, colours) may
   * return its natural type: the graph then appends the engine's cast to `to` (src/graph/cast.ts),
   * which gives the same pixels. A type the function cannot produce (a colour output asked for
   * U4, a class map asked for C64) is refused here with an EngineError whose path is
   * `outputPixelType` (helpers in src/graph/output-type.ts). Each function's header comment says
   * which of the three it does.
   */
  plan(args: ArgValues<A>, inputs: readonly RasterInfo[], to?: PixelType): Plan<P>;
  /**
   * What the output's values are when they are codes that a type conversion must not merge or
   * invent (`'colour channels'`, `'class values'`): the plan returns its natural type and the
   * engine's cast converts to a requested outputPixelType without changing a value, and the
   * graph refuses (INVALID_ARGUMENT at `outputPixelType`) a complex type or one that cannot hold
   * the output's advertised range (its statistics, else its natural type's range).
   */
  readonly codes?: string;
  /**
   * With `plan.requestStatistics`: fold the request's statistics (one array per listed input, one
   * entry per band; `undefined` for a band with no valid pixel) into the kernel parameters.
   */
  bindStatistics?(params: P, statistics: readonly (readonly (RequestBandStatistics | undefined)[])[]): P;
  /**
   * Inputs (indexes into `inputs`) whose band statistics `plan` would use but which have none
   * (ShadedRelief's ramp range, a Stretch without DRA that needs min/max or mean/stdDev). The
   * builder computes them before planning (graph/input-statistics.ts: approximately from a
   * source, as `gdalinfo -approx_stats`; exactly over a function's whole grid) and plans with
   * them in the input's info.
   */
  needsStatistics?(args: ArgValues<A>, inputs: readonly RasterInfo[]): readonly number[];
  /** Fill `out` (rect R) from inputs covering R grown by `plan.halo`. Pure and synchronous. */
  kernel(params: P, inputs: readonly PixelBlock[], out: PixelBlock): void;
}

// ---- Graph nodes: the parsed rendering rule after validation and planning.

export interface SourceNode {
  readonly kind: 'source';
  /** Stable identity of the source (its binding name and location), for dedupe and memo keys. */
  readonly id: string;
  readonly info: RasterInfo;
  /** Pixels of `rect`; pixels outside the raster come back with mask 0. */
  readonly read: (rect: Rect, signal?: AbortSignal) => Promise<PixelBlock>;
  /**
   * Optional: `read(block.rect)` into the caller's block (planes and mask overwritten whole), as
   * GDAL's RasterIO fills the caller's buffer, so a caller reading many windows of one size
   * reuses one block (GeoTIFF sources have it; tiles recycle their source blocks through it).
   * The block must have `info`'s pixel type and band count and planes and mask of its rect's
   * size (else INVALID_ARGUMENT naming the field). Resolves to `block`.
   */
  readonly readInto?: (block: PixelBlock, signal?: AbortSignal) => Promise<PixelBlock>;
  /**
   * Optional: per-band statistics of the valid pixels as GDAL's ComputeStatistics with bApproxOK
   * computes them (`gdalinfo -approx_stats`): from the smallest overview with more than 2500
   * pixels, else from a sample of whole blocks; undefined for a band without a valid pixel.
   */
  approximateStatistics?(signal?: AbortSignal): Promise<(BandStatistics | undefined)[]>;
}

export interface FunctionNode {
  readonly kind: 'function';
  /** Canonical (name, args, input ids): equal subtrees share one node. */
  readonly id: string;
  readonly fn: RasterFunction;
  readonly args: Readonly<Record<string, unknown>>;
  readonly inputs: readonly RasterNode[];
  readonly plan: Plan<unknown>;
  /** Same as `plan.info`. */
  readonly info: RasterInfo;
}

export type RasterNode = SourceNode | FunctionNode;

// ---- Registry: an explicit list, looked up case-insensitively, listed for introspection.

export interface Registry {
  get(name: string): RasterFunction | undefined;
  list(): readonly RasterFunction[];
}

/** Function names match case-insensitively: `grayscale` finds `Grayscale`. */
export const lookupKey = (name: string): string => name.toLowerCase();

export function createRegistry(functions: readonly RasterFunction[]): Registry {
  const byName = new Map<string, RasterFunction>();
  for (const fn of functions) {
    for (const name of [fn.name, ...(fn.aliases ?? [])]) {
      const key = lookupKey(name);
      if (byName.has(key)) throw new Error(`raster function registered twice: ${name}`);
      byName.set(key, fn);
    }
  }
  // Sorted on first use: localeCompare starts the ICU collator, about 7 ms of every CLI start.
  let sorted: readonly RasterFunction[] | undefined;
  return {
    get: (name) => byName.get(lookupKey(name)),
    list: () => (sorted ??= [...functions].sort((a, b) => a.name.localeCompare(b.name))),
  };
}

/** Identity helper that checks a definition against its own schema without widening it. */
export const defineFunction = <A extends ArgSchema, P>(fn: RasterFunction<A, P>): RasterFunction<A, P> => fn;
