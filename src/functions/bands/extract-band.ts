/**
 * ExtractBand — pick, reorder or repeat bands of a raster.
 *
 * Spec: raster-functions.md §2 "ExtractBand" (variableName `Raster`). Output band k is input band
 * `ids[k]`; order and repetition are allowed, so the function also reorders and duplicates bands.
 * The selection comes from `BandIDs` (0-based on the wire; the vendor's Python API subtracts 1
 * from user ids), else `BandNames` (case-insensitive match on `RasterInfo.bandNames`), else
 * `BandWavelengths` (not supported yet: `RasterInfo` carries no wavelength metadata).
 * Missing bands: `MissingBandAction` 1 (Fail) rejects an out-of-range id at plan time;
 * 0 (FindBestMatch, default) clamps an id past the end to the last band, as the vendor client does
 * (VJS `ExtractBandFunction`: `id >= bandCount ? bandCount - 1 : id`).
 * Output: the input pixel type and NoData value; band names, statistics and histograms follow the
 * selected bands. Values are copied, never converted.
 * Edges and NoData: the mask is shared by all bands, so the input mask passes through unchanged.
 * outputPixelType: the pixels pass through unchanged, so the engine's cast converts them (values
 * unchanged where the type holds them; otherwise rounded half away from zero and saturated, NaN ->
 * NoData; a real type to complex gives real parts).
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';

export const MissingBandAction = { FindBestMatch: 0, Fail: 1 } as const;

const args = {
  BandIDs: {
    kind: 'numbers',
    integer: true,
    doc: '0-based band indexes, in output order (repeats allowed); an array or a space-delimited string.',
  },
  BandNames: { kind: 'strings', doc: 'Band names, matched case-insensitively; used when BandIDs is not given.' },
  BandWavelengths: {
    kind: 'numbers',
    doc: 'Band centre wavelengths in nm; used when neither BandIDs nor BandNames is given (needs wavelength metadata).',
  },
  MissingBandAction: {
    kind: 'enum',
    values: [0, 1],
    names: { FindBestMatch: 0, BestMatch: 0, Fail: 1 },
    default: MissingBandAction.FindBestMatch,
    doc: '0 FindBestMatch (an id past the last band takes the last band), 1 Fail (reject missing bands).',
  },
  WavelengthMatchTolerance: { kind: 'number', min: 0, doc: 'Tolerance in nm for BandWavelengths matching.' },
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

interface ExtractBandParams {
  /** Index of the `Raster` input among the node's inputs. */
  readonly input: number;
  /** Input band of each output band (already clamped). */
  readonly bands: readonly number[];
}

const at = argPaths(args);

export const extractBand = defineFunction<typeof args, ExtractBandParams>({
  name: 'ExtractBand',
  summary: 'Select, reorder or repeat bands by index or name.',
  variableName: 'Raster',
  family: 'bands',
  verification: 'reference: gdal_translate -b goldens; hand: names, clamping, Fail',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    const fail = a.MissingBandAction === MissingBandAction.Fail;
    const warnings: string[] = [];
    let bands: number[];

    if (a.BandIDs !== undefined && a.BandIDs.length > 0) {
      if (a.BandNames?.length || a.BandWavelengths?.length) {
        warnings.push('BandIDs given: BandNames and BandWavelengths are ignored');
      }
      bands = a.BandIDs.map((id) => {
        // ASSUMPTION (VJS Fail rejects id < 0; FindBestMatch leaves it undefined): a negative id is
        // malformed under both actions, never clamped to band 0.
        if (id < 0) throw invalidArgument(at('BandIDs'), `band id ${id} is negative; BandIDs are 0-based`);
        if (id < src.bandCount) return id;
        if (fail) {
          throw invalidArgument(
            at('BandIDs'),
            `band id ${id} is out of range: the raster has ${src.bandCount} band(s), ids 0..${src.bandCount - 1} (MissingBandAction 1 Fail)`,
          );
        }
        warnings.push(`band id ${id} is out of range; the last band (${src.bandCount - 1}) is used`);
        return src.bandCount - 1;
      });
    } else if (a.BandNames !== undefined && a.BandNames.length > 0) {
      if (a.BandWavelengths?.length) warnings.push('BandNames given: BandWavelengths is ignored');
      bands = byName(a.BandNames, src);
    } else if (a.BandWavelengths !== undefined && a.BandWavelengths.length > 0) {
      // ASSUMPTION (spec: "FindBestMatch picks the nearest wavelength"): RasterInfo has no wavelength
      // metadata yet, so there is nothing to match against; falling back to some band under
      // FindBestMatch would silently return the wrong band, so both actions fail here.
      throw unsupportedInput(
        at('BandWavelengths'),
        'BandWavelengths needs band wavelength metadata, which this raster does not have; use BandIDs or BandNames',
      );
    } else {
      // ASSUMPTION (spec silent; the vendor client defaults to an empty id list): no selection at
      // all is an error rather than a silent pass-through of every band.
      throw invalidArgument(at('BandIDs'), 'ExtractBand needs BandIDs, BandNames or BandWavelengths');
    }
    if (a.WavelengthMatchTolerance !== undefined) {
      warnings.push('WavelengthMatchTolerance only applies to BandWavelengths and is ignored');
    }

    const pick = <T>(list: readonly T[] | undefined): T[] | undefined =>
      list !== undefined && bands.every((b) => b < list.length) ? bands.map((b) => list[b]!) : undefined;
    const info: RasterInfo = {
      ...src,
      bandCount: bands.length,
      bandNames: pick(src.bandNames),
      statistics: pick(src.statistics),
      histograms: pick(src.histograms),
    };
    return { info, halo: 0, params: { input: a.Raster, bands }, ...(warnings.length ? { warnings } : {}) };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    out.mask.set(src.mask);
    for (let k = 0; k < p.bands.length; k++) out.bands[k]!.set(src.bands[p.bands[k]!]!);
  },
});

/** Input band index of each name (case-insensitive, surrounding blanks ignored; the first match wins). */
function byName(names: readonly string[], src: RasterInfo): number[] {
  const have = src.bandNames;
  if (have === undefined || have.length === 0) {
    throw unsupportedInput(at('BandNames'), 'BandNames given but the raster has no band names; use BandIDs');
  }
  const keys = have.map((n) => n.trim().toLowerCase());
  return names.map((name) => {
    const i = keys.indexOf(name.trim().toLowerCase());
    // ASSUMPTION (spec: FindBestMatch picks the nearest wavelength for names): without wavelength
    // metadata there is no best match for an unknown name, so both MissingBandAction values fail.
    if (i < 0) throw invalidArgument(at('BandNames'), `no band named "${name}"; the raster has ${have.join(', ')}`);
    return i;
  });
}
