#!/usr/bin/python3
"""
Reference goldens for the classify family (Classify, MLClassify, SpectralUnmixing), made with
NumPy / SciPy formulations that share no code with rasterflow. Writes the expected rasters, the
inputs derived here (a segment raster, a crop) and golden/classify/cases.json (the rules embed the
class statistics computed here). `reference` goldens: never regenerate them from rasterflow output.

Run: /usr/bin/python3 golden/classify/make_goldens.py   (needs numpy, scipy, GDAL's osgeo, scikit-image)

- Training statistics: four rectangles of golden/data/L7_ETMs.tif (6 x Byte) chosen on a 4-3-2
  false-colour view: ocean, dense forest, urban, pasture. Means and covariances (numpy.cov, n - 1)
  of all six bands go into a ClassifierDefinition (Classify) and a GSG signature text (MLClassify).
- Maximum likelihood: g_k(x) = -0.5 ln|S_k| - 0.5 (x - m_k)' S_k^-1 (x - m_k) with numpy.linalg.inv
  and slogdet (equal priors), argmax over classes (first on ties), in float64.
- Segmented Classify: segments from skimage.segmentation.felzenszwalb on bands 4-3-2 (an independent
  segmentation, stored as a UInt32 id raster); a segment is an 8-connected region of one id
  (scipy.ndimage.label with a 3x3 structure per id), classified by the mean of its L7 pixels.
- SpectralUnmixing on a 100 x 100 crop (coast: urban, beach, water): end members are the mean
  spectra of the ocean, forest and urban training rectangles. Plain: numpy.linalg.lstsq;
  NonNegative: scipy.optimize.nnls per pixel; SumToOne: the augmented row d * [1 1 1] with target d,
  d = 1000 * max|E| (rasterflow's documented weight), then lstsq or nnls. Stored as Float32.
"""
import json
import os

import numpy as np
from osgeo import gdal
from scipy import ndimage
from scipy.optimize import nnls
from skimage.segmentation import felzenszwalb

gdal.UseExceptions()
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
L7 = os.path.join(ROOT, "golden", "data", "L7_ETMs.tif")
REL = "golden/classify"
CO = ["COMPRESS=DEFLATE", "ZLEVEL=9"]

src = gdal.Open(L7)
img = src.ReadAsArray().astype(np.float64)  # (6, H, W)
nb, H, W = img.shape

# (name, value, colour, x, y, w, h)
TRAINING = [
    ("Water", 1, (0, 77, 168), 310, 220, 30, 30),
    ("Forest", 2, (38, 115, 0), 25, 20, 25, 25),
    ("Urban", 3, (230, 0, 0), 235, 135, 30, 25),
    ("Pasture", 4, (211, 255, 190), 30, 220, 40, 30),
]
classes = []
for name, value, rgb, x, y, w, h in TRAINING:
    px = img[:, y:y + h, x:x + w].reshape(nb, -1)
    classes.append({"name": name, "value": value, "rgb": rgb, "count": px.shape[1], "mean": px.mean(axis=1), "cov": np.cov(px)})


def write(path, bands, dtype, geo_from=src, offset=(0, 0), extra=None):
    bands = np.asarray(bands)
    if bands.ndim == 2:
        bands = bands[None]
    drv = gdal.GetDriverByName("GTiff")
    ds = drv.Create(path, bands.shape[2], bands.shape[1], bands.shape[0], dtype, CO + (extra or []))
    gt = list(geo_from.GetGeoTransform())
    gt[0] += offset[0] * gt[1]
    gt[3] += offset[1] * gt[5]
    ds.SetGeoTransform(gt)
    ds.SetProjection(geo_from.GetProjection())
    for i, b in enumerate(bands):
        ds.GetRasterBand(i + 1).WriteArray(b)
    ds = None


def ml_classify(features):
    """features: (nb, N) -> class index per column (first maximum on ties)."""
    g = []
    for c in classes:
        inv = np.linalg.inv(c["cov"])
        _, logdet = np.linalg.slogdet(c["cov"])
        d = features - c["mean"][:, None]
        q = np.einsum("in,ij,jn->n", d, inv, d)
        g.append(-0.5 * logdet - 0.5 * q)
    return np.argmax(np.array(g), axis=0)


values = np.array([c["value"] for c in classes], dtype=np.uint8)

# --- Classify per pixel (and MLClassify: same model).
flat = img.reshape(nb, -1)
per_pixel = values[ml_classify(flat)].reshape(H, W)
write(os.path.join(HERE, "classify-l7-ml.tif"), per_pixel, gdal.GDT_Byte)

# --- Classify per segment.
seg = felzenszwalb(np.stack([img[3], img[2], img[1]], axis=-1) / 255.0, scale=50, sigma=0.5, min_size=20).astype(np.uint32) + 1
write(os.path.join(HERE, "l7-segments.tif"), seg, gdal.GDT_UInt32)
comp = np.zeros((H, W), dtype=np.int64)
next_id = 0
for v in np.unique(seg):
    lab, n = ndimage.label(seg == v, structure=np.ones((3, 3)))
    comp[lab > 0] = lab[lab > 0] + next_id
    next_id += n
counts = np.bincount(comp.ravel())
means = np.stack([np.bincount(comp.ravel(), weights=img[b].ravel()) for b in range(nb)]) / np.maximum(counts, 1)
seg_class = values[ml_classify(means)]
per_segment = seg_class[comp]
write(os.path.join(HERE, "classify-l7-ml-segmented.tif"), per_segment, gdal.GDT_Byte)
print("segments:", next_id, "ids:", len(np.unique(seg)))

# --- Unmixing on a crop.
X0, Y0, CW, CH = 240, 150, 100, 100
crop = img[:, Y0:Y0 + CH, X0:X0 + CW]
write(os.path.join(HERE, "l7-coast-crop.tif"), crop.astype(np.uint8), gdal.GDT_Byte, offset=(X0, Y0))
E = np.stack([classes[i]["mean"] for i in (0, 1, 2)], axis=1)  # (nb, 3): water, forest, urban
names = [classes[i]["name"] for i in (0, 1, 2)]
d = 1000.0 * np.abs(E).max()
Xc = crop.reshape(nb, -1)
Ea = np.vstack([E, d * np.ones((1, 3))])
Xa = np.vstack([Xc, d * np.ones((1, Xc.shape[1]))])
results = {
    "plain": np.linalg.lstsq(E, Xc, rcond=None)[0],
    "sum-to-one": np.linalg.lstsq(Ea, Xa, rcond=None)[0],
    "non-negative": np.stack([nnls(E, Xc[:, i])[0] for i in range(Xc.shape[1])], axis=1),
    "fully-constrained": np.stack([nnls(Ea, Xa[:, i])[0] for i in range(Xa.shape[1])], axis=1),
}
for key, f in results.items():
    write(os.path.join(HERE, f"unmix-{key}.tif"), f.reshape(3, CH, CW).astype(np.float32), gdal.GDT_Float32, offset=(X0, Y0), extra=["PREDICTOR=3"])

# --- cases.json
definition = {
    "geoClassifierDefinitionFile": 0,
    "FileVersion": 1,
    "NumberDefinitions": 1,
    "Definitions": [{
        "Classifier": "MaximumLikelihood",
        "NumberClasses": len(classes),
        "RasterIsSegmented": False,
        "NumberBands": nb,
        "Classes": [{
            "ClassValue": c["value"], "ClassName": c["name"], "Red": c["rgb"][0], "Green": c["rgb"][1], "Blue": c["rgb"][2],
            "Count": c["count"], "Means": [float(v) for v in c["mean"]], "Covariances": [[float(v) for v in row] for row in c["cov"]],
        } for c in classes],
    }],
}
gsg = ["# Signatures from golden/classify/make_goldens.py (L7_ETMs.tif training rectangles)",
       "#  Type  Number of Classes  Number of Layers  Number of Parametric Layers",
       f"     1  {len(classes)}  {nb}  {nb}"]
for c in classes:
    gsg.append("# ---------------------------------------------------------------")
    gsg.append("#  Class ID  Number of Cells  Class Name")
    gsg.append(f"  {c['value']}  {c['count']}  {c['name']}")
    gsg.append("#  Means")
    gsg.append("  " + " ".join(repr(float(v)) for v in c["mean"]))
    gsg.append("#  Covariance")
    for i, row in enumerate(c["cov"]):
        gsg.append(f"  {i + 1} " + " ".join(repr(float(v)) for v in row))
gsg_text = "\n".join(gsg) + "\n"

prov = {"tool": "NumPy/SciPy", "version": f"numpy {np.__version__}, scipy {__import__('scipy').__version__}, GDAL {gdal.__version__}",
        "script": f"{REL}/make_goldens.py"}
unmix_def = {"geoClassifierDefinitionFile": 0, "FileVersion": 1, "NumberDefinitions": 1, "Definitions": [{
    "Classifier": "LinearSpectralUnmixing", "NumberClasses": 3, "RasterIsSegmented": False, "NumberBands": nb,
    "Classes": [{"ClassValue": i + 1, "ClassName": names[i], "Means": [float(v) for v in E[:, i]]} for i in range(3)]}]}
cases = [
    {"id": "classify/classify-l7-ml", "rule": {"rasterFunction": "Classify", "rasterFunctionArguments": {"ClassifierDefinition": definition}},
     "inputs": ["golden/data/L7_ETMs.tif"], "expected": f"{REL}/classify-l7-ml.tif", "kind": "reference", "tolerance": {"abs": 0},
     "provenance": {**prov, "command": "ml_classify(): inv/slogdet Gaussian discriminant, equal priors",
                    "note": "Class statistics from four training rectangles; class values 1..4 (U8)."}},
    {"id": "classify/classify-l7-ml-segmented", "rule": {"rasterFunction": "Classify", "rasterFunctionArguments": {"ClassifierDefinition": definition, "Raster2": "$2"}},
     "inputs": ["golden/data/L7_ETMs.tif", f"{REL}/l7-segments.tif"], "expected": f"{REL}/classify-l7-ml-segmented.tif", "kind": "reference", "tolerance": {"abs": 0},
     "provenance": {**prov, "command": "felzenszwalb segments; 8-connected regions per id (ndimage.label); class of each region's mean vector",
                    "note": "Segments are whole-image objects; the harness renders in 128-pixel tiles."}},
    {"id": "classify/mlclassify-l7-gsg", "rule": {"rasterFunction": "MLClassify", "rasterFunctionArguments": {"SignatureFile": gsg_text}},
     "inputs": ["golden/data/L7_ETMs.tif"], "expected": f"{REL}/classify-l7-ml.tif", "kind": "reference", "tolerance": {"abs": 0},
     "provenance": {**prov, "command": "same model as classify-l7-ml, given as GSG signature text",
                    "note": "The signature text carries the same means and covariances (repr precision)."}},
]
for key, nn, s1 in [("plain", False, False), ("sum-to-one", False, True), ("non-negative", True, False), ("fully-constrained", True, True)]:
    cases.append({
        "id": f"classify/unmix-{key}",
        "rule": {"rasterFunction": "SpectralUnmixing", "rasterFunctionArguments": {"SpectralProfileDefinition": unmix_def, "NonNegative": nn, "SumToOne": s1}},
        "inputs": [f"{REL}/l7-coast-crop.tif"], "expected": f"{REL}/unmix-{key}.tif", "kind": "reference",
        "tolerance": {"abs": 1e-6},
        "provenance": {**prov, "command": {"plain": "numpy.linalg.lstsq(E, x)", "sum-to-one": "numpy.linalg.lstsq([E; d 1'], [x; d]), d = 1000 max|E|",
                                           "non-negative": "scipy.optimize.nnls(E, x)", "fully-constrained": "scipy.optimize.nnls([E; d 1'], [x; d])"}[key],
                       "note": "End members: mean spectra of the water, forest and urban training rectangles; Float32 output; rasterflow solves the normal equations (Cholesky); measured max |diff| 2.4e-7 (F32 rounding), tolerance 1e-6."}})
with open(os.path.join(HERE, "cases.json"), "w") as fh:
    json.dump(cases, fh, indent=2)
    fh.write("\n")
print("wrote", len(cases), "cases")
