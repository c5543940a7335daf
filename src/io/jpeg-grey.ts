/**
 * A baseline greyscale JPEG (one component) from 8-bit samples: jpeg-js writes only three-
 * component YCbCr images, and a one-band render is greyscale, so GDAL, browsers and viewers must
 * see one band. ITU-T T.81 baseline sequential DCT, Huffman coded with the example luminance tables
 * of Annex K (K.1 quantisation scaled by quality as libjpeg does, K.3 Huffman), a JFIF APP0 marker.
 * Edge blocks repeat the last column and row (as libjpeg pads).
 */

/** Annex K.1 luminance quantisation table, natural (row-major) order. */
const BASE_Q = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62, 18, 22,
  37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];

/** Zig-zag position k -> natural index. */
const ZIGZAG = [
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57,
  50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];

// Annex K.3: luminance DC and AC Huffman tables (code counts per length 1..16, then the values).
const DC_BITS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
const DC_VALS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
const AC_BITS = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d];
const AC_VALS = [
  0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1,
  0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26,
  0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56,
  0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85,
  0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa,
  0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6,
  0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9,
  0xfa,
];

/** Code and length per symbol (Annex C). */
function huffmanCodes(bits: readonly number[], vals: readonly number[]): { code: Uint16Array; size: Uint8Array } {
  const code = new Uint16Array(256);
  const size = new Uint8Array(256);
  let c = 0;
  let k = 0;
  for (let len = 1; len <= 16; len++) {
    for (let i = 0; i < bits[len - 1]!; i++) {
      code[vals[k]!] = c;
      size[vals[k]!] = len;
      c++;
      k++;
    }
    c <<= 1;
  }
  return { code, size };
}

const DC = huffmanCodes(DC_BITS, DC_VALS);
const AC = huffmanCodes(AC_BITS, AC_VALS);

/** cos((2x + 1) u pi / 16) * C(u) / 2, indexed [u * 8 + x]. */
const DCT = (() => {
  const t = new Float64Array(64);
  for (let u = 0; u < 8; u++) {
    const c = u === 0 ? Math.SQRT1_2 : 1;
    for (let x = 0; x < 8; x++) t[u * 8 + x] = (c / 2) * Math.cos(((2 * x + 1) * u * Math.PI) / 16);
  }
  return t;
})();

/** The quantisation table for a quality 1..100, natural order (libjpeg's scaling). */
function quantTable(quality: number): Uint8Array {
  const q = Math.min(100, Math.max(1, Math.round(quality)));
  const scale = q < 50 ? Math.floor(5000 / q) : 200 - 2 * q;
  return Uint8Array.from(BASE_Q, (b) => Math.min(255, Math.max(1, Math.floor((b * scale + 50) / 100))));
}

class BitWriter {
  private buf = new Uint8Array(1 << 16);
  private n = 0;
  private acc = 0;
  private bits = 0;

  byte(b: number): void {
    if (this.n === this.buf.length) {
      const next = new Uint8Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.n++] = b;
  }

  bytes(bs: ArrayLike<number>): void {
    for (let i = 0; i < bs.length; i++) this.byte(bs[i]!);
  }

  /** Entropy-coded bits, most significant first, with 0xFF stuffing. */
  put(code: number, size: number): void {
    this.acc = (this.acc << size) | (code & ((1 << size) - 1));
    this.bits += size;
    while (this.bits >= 8) {
      const b = (this.acc >>> (this.bits - 8)) & 0xff;
      this.byte(b);
      if (b === 0xff) this.byte(0);
      this.bits -= 8;
    }
    this.acc &= (1 << this.bits) - 1;
  }

  /** Pad the last byte with 1 bits. */
  flush(): void {
    if (this.bits > 0) this.put((1 << (8 - this.bits)) - 1, 8 - this.bits);
  }

  result(): Uint8Array {
    return this.buf.slice(0, this.n);
  }
}

/** Magnitude category (bit count) of a coefficient, and its bits (one's complement for negatives). */
const category = (v: number): number => (v === 0 ? 0 : 32 - Math.clz32(Math.abs(v)));

/** Encode `width` x `height` 8-bit samples (row-major) as a one-component baseline JPEG. */
export function encodeGreyJpeg(samples: Uint8Array, width: number, height: number, quality: number): Uint8Array {
  const qt = quantTable(quality);
  const w = new BitWriter();
  w.bytes([0xff, 0xd8]);
  // APP0 JFIF 1.01, no density units, 1:1, no thumbnail.
  w.bytes([0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]);
  // DQT: table 0, 8-bit, zig-zag order.
  w.bytes([0xff, 0xdb, 0, 67, 0]);
  for (let k = 0; k < 64; k++) w.byte(qt[ZIGZAG[k]!]!);
  // SOF0: 8-bit, height, width, one component (id 1, 1x1 sampling, table 0).
  w.bytes([0xff, 0xc0, 0, 11, 8, height >> 8, height & 0xff, width >> 8, width & 0xff, 1, 1, 0x11, 0]);
  // DHT: DC table 0, AC table 0.
  w.bytes([0xff, 0xc4, 0, 3 + 16 + DC_VALS.length, 0x00, ...DC_BITS, ...DC_VALS]);
  w.bytes([0xff, 0xc4, (3 + 16 + AC_VALS.length) >> 8, (3 + 16 + AC_VALS.length) & 0xff, 0x10, ...AC_BITS, ...AC_VALS]);
  // SOS: one component, tables 0/0, spectral 0..63, no approximation.
  w.bytes([0xff, 0xda, 0, 8, 1, 1, 0x00, 0, 63, 0]);

  const block = new Float64Array(64);
  const tmp = new Float64Array(64);
  const coef = new Int32Array(64);
  let prevDc = 0;
  for (let by = 0; by < height; by += 8) {
    for (let bx = 0; bx < width; bx += 8) {
      for (let y = 0; y < 8; y++) {
        const row = Math.min(height - 1, by + y) * width;
        for (let x = 0; x < 8; x++) block[y * 8 + x] = samples[row + Math.min(width - 1, bx + x)]! - 128;
      }
      // Separable forward DCT: rows, then columns.
      for (let y = 0; y < 8; y++) {
        for (let u = 0; u < 8; u++) {
          let s = 0;
          for (let x = 0; x < 8; x++) s += DCT[u * 8 + x]! * block[y * 8 + x]!;
          tmp[y * 8 + u] = s;
        }
      }
      for (let u = 0; u < 8; u++) {
        for (let v = 0; v < 8; v++) {
          let s = 0;
          for (let y = 0; y < 8; y++) s += DCT[v * 8 + y]! * tmp[y * 8 + u]!;
          coef[v * 8 + u] = Math.round(s / qt[v * 8 + u]!);
        }
      }
      // DC difference.
      const dc = coef[0]!;
      const diff = dc - prevDc;
      prevDc = dc;
      const dcCat = category(diff);
      w.put(DC.code[dcCat]!, DC.size[dcCat]!);
      if (dcCat > 0) w.put(diff < 0 ? diff - 1 : diff, dcCat);
      // AC run-lengths in zig-zag order.
      let run = 0;
      for (let k = 1; k < 64; k++) {
        const v = coef[ZIGZAG[k]!]!;
        if (v === 0) {
          run++;
          continue;
        }
        while (run > 15) {
          w.put(AC.code[0xf0]!, AC.size[0xf0]!);
          run -= 16;
        }
        const cat = category(v);
        const sym = (run << 4) | cat;
        w.put(AC.code[sym]!, AC.size[sym]!);
        w.put(v < 0 ? v - 1 : v, cat);
        run = 0;
      }
      if (run > 0) w.put(AC.code[0x00]!, AC.size[0x00]!);
    }
  }
  w.flush();
  w.bytes([0xff, 0xd9]);
  return w.result();
}
