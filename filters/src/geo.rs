//! Bounding boxes and a multi-level grid over them.
//!
//! A box is `sw_lon,sw_lat,ne_lon,ne_lat` in degrees. Edges are inclusive: a
//! point on the border is inside. Latitudes must satisfy `sw_lat <= ne_lat`.
//! **Antimeridian rule:** a box whose `sw_lon` is greater than its `ne_lon`
//! crosses the antimeridian and covers `sw_lon..=180` and `-180..=ne_lon`
//! (so `170,-10,-170,10` is a 20° wide box around Fiji). Longitudes 180 and
//! -180 are the same meridian and both edges match it.

use crate::table::ListMap;

/// A validated bounding box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BBox {
    /// West edge, degrees in [-180, 180].
    pub sw_lon: f64,
    /// South edge, degrees in [-90, 90].
    pub sw_lat: f64,
    /// East edge, degrees in [-180, 180]; less than `sw_lon` when the box crosses the antimeridian.
    pub ne_lon: f64,
    /// North edge, degrees in [-90, 90], at least `sw_lat`.
    pub ne_lat: f64,
}

impl BBox {
    /// Validates one box; the error is a sentence for the `locations` parameter.
    pub fn new(sw_lon: f64, sw_lat: f64, ne_lon: f64, ne_lat: f64) -> Result<BBox, String> {
        let lon_ok = |v: f64| v.is_finite() && (-180.0..=180.0).contains(&v);
        let lat_ok = |v: f64| v.is_finite() && (-90.0..=90.0).contains(&v);
        if !lon_ok(sw_lon) || !lon_ok(ne_lon) {
            return Err("longitudes must be within [-180, 180]".into());
        }
        if !lat_ok(sw_lat) || !lat_ok(ne_lat) {
            return Err("latitudes must be within [-90, 90]".into());
        }
        if sw_lat > ne_lat {
            return Err(format!(
                "box south-west latitude {sw_lat} is north of its north-east latitude {ne_lat}"
            ));
        }
        Ok(BBox {
            sw_lon,
            sw_lat,
            ne_lon,
            ne_lat,
        })
    }

    /// Whether the box crosses the antimeridian.
    pub fn crosses_antimeridian(&self) -> bool {
        self.sw_lon > self.ne_lon
    }

    /// Whether the point (`lat`, `lon`) lies inside or on the border.
    pub fn contains(&self, lat: f64, lon: f64) -> bool {
        if lat < self.sw_lat || lat > self.ne_lat {
            return false;
        }
        let inside = |lon: f64| {
            if self.crosses_antimeridian() {
                lon >= self.sw_lon || lon <= self.ne_lon
            } else {
                lon >= self.sw_lon && lon <= self.ne_lon
            }
        };
        // -180 and 180 are one meridian.
        inside(lon) || (lon == 180.0 && inside(-180.0)) || (lon == -180.0 && inside(180.0))
    }

    /// Longitude spans the box covers, one or two (antimeridian).
    fn lon_spans(&self) -> [(f64, f64); 2] {
        if self.crosses_antimeridian() {
            [(self.sw_lon, 180.0), (-180.0, self.ne_lon)]
        } else {
            [(self.sw_lon, self.ne_lon), (f64::NAN, f64::NAN)]
        }
    }
}

/// A grid level: cells of `1 / per_deg` degrees. Only cells holding boxes
/// are stored, in a map behind a prefilter, so a point in an empty cell
/// usually costs one read in a small bit array.
#[derive(Debug, Clone)]
struct Level<T> {
    /// Cells per degree: a power of two, so `(x + 90) * per_deg` is exact
    /// and a point and the box edges around it land in cells consistently.
    per_deg: f64,
    n_lat: usize,
    n_lon: usize,
    /// Most cells a box may take here before it moves to a coarser level.
    max_cells: usize,
    /// Cell number -> the boxes (with their values) that overlap the cell.
    cells: ListMap<(BBox, T)>,
}

impl<T: Copy + PartialEq> Level<T> {
    fn new(per_deg: f64, max_cells: usize) -> Self {
        Level {
            per_deg,
            n_lat: (180.0 * per_deg).ceil() as usize,
            n_lon: (360.0 * per_deg).ceil() as usize,
            max_cells,
            cells: ListMap::default(),
        }
    }

    fn lat_idx(&self, lat: f64) -> usize {
        (((lat + 90.0) * self.per_deg).floor().max(0.0) as usize).min(self.n_lat - 1)
    }

    fn lon_idx(&self, lon: f64) -> usize {
        (((lon + 180.0) * self.per_deg).floor().max(0.0) as usize).min(self.n_lon - 1)
    }

    /// Cell numbers the box covers, or `None` if more than `max_cells`.
    fn cover(&self, b: &BBox) -> Option<Vec<u64>> {
        let lats = self.lat_idx(b.sw_lat)..=self.lat_idx(b.ne_lat);
        let mut lons: Vec<usize> = Vec::new();
        for (w, e) in b.lon_spans() {
            if w.is_nan() {
                continue;
            }
            lons.extend(self.lon_idx(w)..=self.lon_idx(e));
        }
        // The meridian ±180 lives in the first and the last column.
        if lons.contains(&(self.n_lon - 1)) && !lons.contains(&0) && b.contains(b.sw_lat, -180.0) {
            lons.push(0);
        }
        if lons.contains(&0) && !lons.contains(&(self.n_lon - 1)) && b.contains(b.sw_lat, 180.0) {
            lons.push(self.n_lon - 1);
        }
        lons.sort_unstable();
        lons.dedup();
        if lats.clone().count() * lons.len() > self.max_cells {
            return None;
        }
        Some(
            lats.flat_map(|la| lons.iter().map(move |lo| (la * self.n_lon + lo) as u64))
                .collect(),
        )
    }

    fn cell_of(&self, lat: f64, lon: f64) -> u64 {
        (self.lat_idx(lat) * self.n_lon + self.lon_idx(lon)) as u64
    }

    fn insert(&mut self, cells: &[u64], b: BBox, v: T) {
        for &c in cells {
            self.cells.push(c, (b, v));
        }
    }

    fn remove(&mut self, cells: &[u64], v: T) {
        for &c in cells {
            self.cells.retain(c, |(_, x)| *x != v);
        }
    }
}

/// Cells a box may take in every level but the coarsest: with at most four
/// (two by two), a box goes to the level whose cells are about its size.
const MAX_CELLS: usize = 4;
/// Cells a box may take in the coarsest level (16°), which holds boxes up
/// to about 110° across; larger ones go to one list every point scans.
const MAX_COARSE_CELLS: usize = 64;
/// Cells per degree of each level, finest first: 1/16°, 1/4°, 1°, 4°, 16°.
const LEVELS: [f64; 5] = [16.0, 4.0, 1.0, 0.25, 0.0625];

/// Boxes of many subscribers, found from a point without scanning them all.
///
/// A box lives in the finest of five grids (cells of 1/16° up to 16°, four
/// times coarser each) where it takes at most four cells, so a cell holds
/// boxes of about its own size and a point reads one cell per level. Cells
/// are stored only when they hold boxes, behind prefilters, so a hundred
/// thousand city-sized boxes cost a point a few cache hits, not a walk
/// through memory. The few boxes too large even for the coarsest grid are
/// in one list.
#[derive(Debug, Clone)]
pub struct GeoIndex<T> {
    levels: Vec<Level<T>>,
    huge: Vec<(BBox, T)>,
}

impl<T: Copy + PartialEq> Default for GeoIndex<T> {
    fn default() -> Self {
        let last = LEVELS.len() - 1;
        GeoIndex {
            levels: LEVELS
                .iter()
                .enumerate()
                .map(|(i, &per_deg)| {
                    let max = if i == last {
                        MAX_COARSE_CELLS
                    } else {
                        MAX_CELLS
                    };
                    Level::new(per_deg, max)
                })
                .collect(),
            huge: Vec::new(),
        }
    }
}

impl<T: Copy + PartialEq> GeoIndex<T> {
    /// The level that files `b`, with the cells it takes there (`None`: huge).
    fn place(&self, b: &BBox) -> Option<(usize, Vec<u64>)> {
        self.levels
            .iter()
            .enumerate()
            .find_map(|(i, level)| level.cover(b).map(|cells| (i, cells)))
    }

    /// Files `b` under `v`.
    pub fn insert(&mut self, b: BBox, v: T) {
        match self.place(&b) {
            Some((i, cells)) => self.levels[i].insert(&cells, b, v),
            None => self.huge.push((b, v)),
        }
    }

    /// Removes box `b` filed under `v` (and any other box of `v` in the same cells).
    pub fn remove(&mut self, b: BBox, v: T) {
        match self.place(&b) {
            Some((i, cells)) => self.levels[i].remove(&cells, v),
            None => self.huge.retain(|(_, x)| *x != v),
        }
    }

    /// Calls `f` for every value with a box containing the point (a value may
    /// come more than once when several of its boxes contain it).
    pub fn find(&self, lat: f64, lon: f64, mut f: impl FnMut(T)) {
        let mut scan = |list: &[(BBox, T)]| {
            for (b, v) in list {
                if b.contains(lat, lon) {
                    f(*v);
                }
            }
        };
        for level in &self.levels {
            if level.cells.is_empty() {
                continue;
            }
            // A box on the ±180 meridian is filed in both edge columns (see
            // `Level::cover`), so a point there needs only its own cell.
            scan(level.cells.get(level.cell_of(lat, lon)));
        }
        scan(&self.huge);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which level files a box (`None`: the huge list), and in how many cells.
    fn placed(b: BBox) -> Option<(f64, usize)> {
        let g = GeoIndex::<u64>::default();
        g.place(&b)
            .map(|(i, cells)| (g.levels[i].per_deg, cells.len()))
    }

    /// Boxes go to the grid whose cells match their size, so a point reads
    /// few boxes that cannot contain it; only near-world boxes are scanned
    /// by every point.
    #[test]
    fn a_box_is_filed_in_the_grid_of_its_size() {
        let b = |w: f64, s: f64, e: f64, n: f64| BBox::new(w, s, e, n).unwrap();
        // A block in a city, a city, a region, a country, a continent.
        assert_eq!(placed(b(2.35, 48.85, 2.36, 48.86)), Some((16.0, 1)));
        assert_eq!(placed(b(2.2, 48.8, 2.5, 48.9)), Some((4.0, 3)));
        assert_eq!(placed(b(-5.0, 42.0, -3.5, 43.5)), Some((1.0, 4)));
        assert_eq!(placed(b(-5.0, 42.0, 3.0, 51.0)), Some((0.0625, 2)));
        assert_eq!(placed(b(-20.0, -35.0, 52.0, 38.0)), Some((0.0625, 30)));
        // Across the antimeridian: both sides' cells.
        assert_eq!(placed(b(179.95, -16.0, -179.95, -15.95)), Some((16.0, 2)));
        assert_eq!(placed(b(-180.0, -90.0, 180.0, 90.0)), None);
    }
}
