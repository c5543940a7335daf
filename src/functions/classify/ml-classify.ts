/**
 * MLClassify — maximum-likelihood classification from a signature file's text (GSG format).
 *
 * Spec: raster-functions.md §2 "MLClassify" (arguments `SignatureFile`, `Raster` [VPY ml_classify:
 * "a signature string returned from computeClassStatistics (GSG)"]). Math: the same Gaussian
 * discriminant as Classify (`definition.ts`: Cholesky once per plan, equal priors, ties to the
 * first class, singular covariances refused naming the class); no reject fraction.
 *
 * GSG text [spec, "unsure"; parsed tolerantly]: lines starting with `#` are comments; blank lines
 * are skipped; numbers are separated by blanks, tabs or commas. The first data line is the header
 * `<type> <numClasses> <numLayers> [<numParametricLayers>]`; then, per class,
 *   `<classId> <cellCount> [<className ...>]`   (class name optional, may contain blanks)
 *   `<mean_1> ... <mean_n>`                      (n = numLayers)
 *   n covariance rows `<layer> <c_1> ... <c_n>` (layer = 1..n; rows of a symmetric matrix).
 * A malformed file is INVALID_ARGUMENT at `rasterFunctionArguments.SignatureFile` with the line
 * number (1-based, counting every line) in the message. ASSUMPTION: the class id is the output
 * value (the vendor's ML classifier writes class ids); the layers are the raster's bands in order.
 *
 * Output: one band of class ids, U8 (U16/S32 when needed), NoData 0 when no class is 0; colormap:
 * none (a GSG file carries no colours); statistics min/max of the ids. NoData where Raster is
 * NoData (any band).
 * outputPixelType: class ids through the engine's cast to any real type that holds the advertised
 * class range (values unchanged); complex types, and types that would merge classes, are refused
 * when the rule is built.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { classOutputInfo } from './classify.js';
import { buildModel, classifyPixels, type MLClassInput, type MLModel } from './definition.js';

const args = {
  SignatureFile: {
    kind: 'string',
    aliases: ['Signature', 'SignatureFileContent'],
    doc: 'The text of a GSG signature file (header, then per class: id/count/name line, means line, covariance rows).',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Raster to classify, one band per signature layer; defaults to $$.' },
} as const satisfies ArgSchema;

export interface MLClassifyParams {
  readonly raster: number;
  readonly model: MLModel;
}

const at = argPaths(args);
const PATH = at('SignatureFile');

export interface Signature {
  readonly layers: number;
  readonly classes: readonly (MLClassInput & { readonly count: number })[];
}

/** Parse GSG signature text; errors name the 1-based line. */
export function parseSignature(text: string): Signature {
  const lines: { no: number; tokens: string[] }[] = [];
  text.split(/\r\n|\r|\n/).forEach((raw, i) => {
    const s = raw.trim();
    if (s === '' || s.startsWith('#')) return;
    lines.push({ no: i + 1, tokens: s.split(/[\s,]+/).filter((t) => t !== '') });
  });
  let at = 0;
  const next = (what: string): { no: number; tokens: string[] } => {
    const l = lines[at++];
    if (l === undefined) throw invalidArgument(PATH, `the signature file ends early: expected ${what}`);
    return l;
  };
  const numbers = (l: { no: number; tokens: string[] }, from: number, count: number, what: string): number[] => {
    const t = l.tokens.slice(from);
    if (t.length < count) throw invalidArgument(PATH, `line ${l.no}: expected ${count} number(s) for ${what}, found ${t.length}`);
    return t.slice(0, count).map((s) => {
      const v = Number(s);
      if (!Number.isFinite(v)) throw invalidArgument(PATH, `line ${l.no}: "${s}" is not a number (${what})`);
      return v;
    });
  };

  if (lines.length === 0) throw invalidArgument(PATH, 'the signature file is empty (only comments or blank lines)');
  const header = next('the header line');
  const [, nClasses, nLayers] = numbers(header, 0, 3, 'the header "<type> <numClasses> <numLayers> <numParametricLayers>"');
  if (!Number.isInteger(nClasses) || nClasses! < 1)
    throw invalidArgument(PATH, `line ${header.no}: the number of classes must be a positive integer, got ${nClasses}`);
  if (!Number.isInteger(nLayers) || nLayers! < 1)
    throw invalidArgument(PATH, `line ${header.no}: the number of layers must be a positive integer, got ${nLayers}`);
  const n = nLayers!;
  const classes: (MLClassInput & { count: number })[] = [];
  const seen = new Set<number>();
  for (let k = 0; k < nClasses!; k++) {
    const idLine = next(`the id line of class ${k + 1} of ${nClasses}`);
    const [id, count] = numbers(idLine, 0, 2, `"<classId> <cellCount> [<className>]" of class ${k + 1}`);
    if (!Number.isInteger(id)) throw invalidArgument(PATH, `line ${idLine.no}: class id must be an integer, got ${id}`);
    if (seen.has(id!)) throw invalidArgument(PATH, `line ${idLine.no}: class id ${id} appears twice`);
    seen.add(id!);
    const name = idLine.tokens.slice(2).join(' ') || `Class ${id}`;
    const meanLine = next(`the means of class ${id}`);
    if (meanLine.tokens.length !== n) {
      throw invalidArgument(PATH, `line ${meanLine.no}: class ${id} needs ${n} means (one per layer), found ${meanLine.tokens.length}`);
    }
    const means = numbers(meanLine, 0, n, `the means of class ${id}`);
    const covariance = new Float64Array(n * n);
    for (let r = 0; r < n; r++) {
      const row = next(`covariance row ${r + 1} of class ${id}`);
      if (row.tokens.length !== n + 1) {
        throw invalidArgument(
          PATH,
          `line ${row.no}: covariance row ${r + 1} of class ${id} needs its layer number and ${n} values, found ${row.tokens.length} numbers`,
        );
      }
      const v = numbers(row, 0, n + 1, `covariance row ${r + 1} of class ${id}`);
      if (v[0] !== r + 1)
        throw invalidArgument(PATH, `line ${row.no}: covariance row ${r + 1} of class ${id} starts with layer ${v[0]}, expected ${r + 1}`);
      covariance.set(v.slice(1), r * n);
    }
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < i; j++) {
        const a = covariance[i * n + j]!;
        const b = covariance[j * n + i]!;
        if (Math.abs(a - b) > 1e-6 * Math.max(1, Math.abs(a), Math.abs(b))) {
          throw invalidArgument(
            PATH,
            `class ${id} ("${name}"): the covariance matrix is not symmetric (row ${i + 1} column ${j + 1}: ${a} vs ${b})`,
          );
        }
      }
    }
    classes.push({ value: id!, name, count: count!, means, covariance, covariancePath: PATH });
  }
  if (at < lines.length) {
    throw invalidArgument(PATH, `line ${lines[at]!.no}: unexpected data after the ${nClasses} class(es) announced by the header`);
  }
  return { layers: n, classes };
}

export const mlClassify = defineFunction<typeof args, MLClassifyParams>({
  name: 'MLClassify',
  summary: 'Maximum-likelihood classification from the text of a GSG signature file.',
  variableName: 'Raster',
  family: 'classify',
  codes: 'class values',
  verification: 'reference: NumPy Gaussian maximum-likelihood (golden, shared with Classify); hand: GSG parsing, discriminants',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    if (isComplex(src.pixelType)) throw unsupportedInput(at('Raster'), `MLClassify needs a real-valued raster, got ${src.pixelType}`);
    if (a.SignatureFile === undefined || a.SignatureFile.trim() === '') {
      throw invalidArgument(PATH, 'MLClassify needs SignatureFile: the text of a GSG signature file');
    }
    const sig = parseSignature(a.SignatureFile);
    if (sig.layers !== src.bandCount) {
      throw invalidArgument(PATH, `the signatures are for ${sig.layers} layer(s) but the raster has ${src.bandCount} band(s)`);
    }
    const model = buildModel(sig.classes, sig.layers);
    const info = classOutputInfo(src, sig.classes, PATH);
    return { info, halo: 0, params: { raster: a.Raster, model } };
  },

  kernel(p, inputs, out) {
    classifyPixels(p.model, inputs[p.raster]!, out);
  },
});
