#!/usr/bin/env bash
# Snapshot goldens for VectorFieldRenderer: rasterflow's own output, kept as a regression baseline
# (kind "snapshot" in cases.json). No independent tool draws the vendor's vector-field symbols, so
# these are checked by eye (arrows follow the aspect, barbs grow with the slope) and by the
# hand-derived geometry tests in src/functions/vector/vector-field-renderer.test.ts. Rewrite them
# only after reviewing the difference.
#
# Input: the jacksboro UTM DEM; magnitude = slope, direction = aspect (clockwise from north, where
# the terrain faces).
set -euo pipefail
cd "$(dirname "$0")/../.."
dem=golden/data/jacksboro_fault_dem_utm16n_75m.tif
for name in arrows barbs; do
  node --import tsx src/cli/main.ts render --rule "golden/vector/rule-$name.json" --input "$dem" \
    --output "golden/vector/$name.tif" --window 0,0,192,160
done
