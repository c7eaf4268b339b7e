package v1

// CatalogCacheStatus is the result of a cache lookup. It is stored as the
// integer of the upstream protobuf enum (core.CatalogCacheStatus) so objects
// written by that system decode unchanged; String gives the public name.
type CatalogCacheStatus int32

// The values match the upstream enum numbering.
const (
	CacheDisabled      CatalogCacheStatus = 0
	CacheMiss          CatalogCacheStatus = 1
	CacheHit           CatalogCacheStatus = 2
	CachePopulated     CatalogCacheStatus = 3
	CacheLookupFailure CatalogCacheStatus = 4
	CachePutFailure    CatalogCacheStatus = 5
	CacheSkipped       CatalogCacheStatus = 6
	CacheEvicted       CatalogCacheStatus = 7
)

var cacheStatusNames = [...]string{
	CacheDisabled:      "DISABLED",
	CacheMiss:          "MISS",
	CacheHit:           "HIT",
	CachePopulated:     "POPULATED",
	CacheLookupFailure: "LOOKUP_FAILURE",
	CachePutFailure:    "PUT_FAILURE",
	CacheSkipped:       "SKIPPED",
	CacheEvicted:       "EVICTED",
}

// String returns the public name (DISABLED, MISS, HIT, ...).
func (s CatalogCacheStatus) String() string {
	if s >= 0 && int(s) < len(cacheStatusNames) {
		return cacheStatusNames[s]
	}
	return "DISABLED"
}

// ParseCacheStatus maps a public name back to its value.
func ParseCacheStatus(name string) (CatalogCacheStatus, bool) {
	for i, n := range cacheStatusNames {
		if n == name {
			return CatalogCacheStatus(i), true
		}
	}
	return CacheDisabled, false
}
