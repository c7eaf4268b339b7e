package app

import "github.com/prometheus/client_golang/prometheus"

// registerStorageMetrics exports how full the stores are: the embedded
// etcd's file against its quota (a full etcd refuses every write), and
// what retention has moved out of it.
func (a *App) registerStorageMetrics(reg prometheus.Registerer) {
	reg.MustRegister(a.retired, a.promotionsFinished, a.analysisFinished)
	if _, ok := a.cp.EtcdSpace(); !ok {
		return
	}
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	space := func() (s struct{ size, inUse, quota, noSpace, defrags float64 }) {
		sp, _ := a.cp.EtcdSpace()
		s.size, s.inUse, s.quota, s.defrags = float64(sp.Size), float64(sp.InUse), float64(sp.Quota), float64(sp.Defrags)
		if sp.NoSpace {
			s.noSpace = 1
		}
		return s
	}
	gauge("taskactions_etcd_db_size_bytes", "Size of the embedded etcd's database file.", func() float64 { return space().size })
	gauge("taskactions_etcd_db_size_in_use_bytes", "Bytes of the embedded etcd's file in use (the rest is free until defragmented).", func() float64 { return space().inUse })
	gauge("taskactions_etcd_quota_bytes", "The embedded etcd's space quota (--etcd-quota); writes fail past it.", func() float64 { return space().quota })
	gauge("taskactions_etcd_no_space", "1 while the embedded etcd refuses writes for lack of space.", func() float64 { return space().noSpace })
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "taskactions_etcd_defrags_total", Help: "Defragmentations of the embedded etcd's file.",
	}, func() float64 { return space().defrags }))
}
