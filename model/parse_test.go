package model

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseDelay(t *testing.T) {
	tests := []struct {
		in        string
		mean, std float64 // ns; std < 0: +Inf
		canonical string  // "" = do not check
	}{
		{"constant:value=50us", 50000, 0, "constant:value=50000ns"},
		{"constant:50us", 50000, 0, ""},
		{"CONST: 1.5ms", 1.5e6, 0, ""},
		{"exp:mean=200ns", 200, 200, "exp:mean=200ns"},
		{"exponential:2µs", 2000, 2000, ""},
		{"uniform:min=0,max=12ns", 6, 12 / math.Sqrt(12), "uniform:min=0ns,max=12ns"},
		{"weibull:mean=0.2us,shape=0.6", 200, 351.6, ""},
		{"weibull:scale=100,shape=1", 100, 100, "weibull:scale=100ns,shape=1"},
		{"pareto:mean=200ns,shape=3", 200, 115.5, ""},
		{"pareto:scale=1us,shape=1.5", 3000, -1, ""},
		{"mix:p=0.5;constant:0;constant:2us", 1000, 1000, "mix:p=0.5;constant:value=0ns;constant:value=2000ns"},
		{"constant:1us,offset=10us", 11000, 0, "constant:value=1000ns,offset=10000ns"},
		{"mix:p=1,offset=1us;constant:1us;exp:1s", 2000, 0, "mix:p=1,offset=1000ns;constant:value=1000ns;exp:mean=1e+09ns"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseDelay(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(d.Mean()-tt.mean) > 1e-3*tt.mean+1e-9 {
				t.Errorf("mean %g, want %g", d.Mean(), tt.mean)
			}
			if tt.std < 0 {
				if !math.IsInf(d.Stddev(), 1) {
					t.Errorf("stddev %g, want +Inf", d.Stddev())
				}
			} else if math.Abs(d.Stddev()-tt.std) > 1e-3*tt.std+1e-9 {
				t.Errorf("stddev %g, want %g", d.Stddev(), tt.std)
			}
			if tt.canonical != "" && d.String() != tt.canonical {
				t.Errorf("String() = %q, want %q", d.String(), tt.canonical)
			}
			checkDelayRoundTrip(t, d)
		})
	}
}

// badDelays are malformed inputs with a substring the error must contain
// (the bad token). They seed FuzzParseDelay.
var badDelays = []struct{ in, token string }{
	{"", "missing kind"},
	{":50us", "missing kind"},
	{"gauss:mean=1", `"gauss"`},
	{"constant", "value="},
	{"constant:value=fast", `"value=fast"`},
	{"constant:value=-1us", `"value=-1us"`},
	{"constant:value=NaN", `"value=NaN"`},
	{"constant:value=1e400", `"value=1e400"`},
	{"constant:value=1us,value=2us", `"value=2us"`},
	{"constant:1us,speed=3", `"speed"`},
	{"exp:mean=0", `"mean=0"`},
	{"uniform:min=5,max=1", `"min=5"`},
	{"uniform:5", `"5"`},
	{"weibull:mean=50us", "shape="},
	{"weibull:mean=50us,shape=0.01", `"shape=0.01"`},
	{"weibull:mean=50us,scale=1us,shape=1", "exactly one"},
	{"weibull:mean=50us,shape=x", `"shape=x"`},
	{"pareto:mean=50us,shape=1", `"shape=1"`},
	{"pareto:mean=2h,shape=3", `"mean=2h"`},
	{"weibull:mean=50us,,shape=1", "empty token"},
	{"weibull:mean=50us,=3,shape=1", `"=3"`},
	{"constant:1us;exp:1us", "only separates"},
	{"mix:p=0.5;constant:1", "two modes"},
	{"mix:p=0.5;constant:1;constant:2;constant:3", "exactly two"},
	{"mix:p=1.5;constant:1;constant:2", `"p=1.5"`},
	{"mix;constant:1;constant:2", "p="},
	{"mix:p=0.5;mix:p=1;constant:1", "cannot be mixes"},
	{"mix:p=0.5;constant:1;weibull:mean=1,shape=zz", `"shape=zz"`},
	{"mix:p=0.5,q=1;constant:1;constant:2", `"q=1"`},
	{"constant:1,offset=-5", `"offset=-5"`},
	{"constant:1,offset=1,offset=2", `"offset=2"`},
}

func TestParseDelayErrors(t *testing.T) {
	for _, tt := range badDelays {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseDelay(tt.in)
			if err == nil {
				t.Fatalf("accepted as %v", d)
			}
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, errParam) {
				t.Errorf("error %v wraps neither ErrSyntax nor a parameter error", err)
			}
			if !strings.Contains(err.Error(), tt.token) {
				t.Errorf("error %q does not name %s", err, tt.token)
			}
		})
	}
	if _, err := ParseDelay(strings.Repeat("x", 2000)); err == nil {
		t.Error("accepted 2000-byte text")
	}
}

func TestParseLoss(t *testing.T) {
	tests := []struct {
		in, canonical string
		rate          float64
	}{
		{"none", "none", 0},
		{"uniform:rate=0.001", "uniform:rate=0.001", 0.001},
		{"uniform:0.5%", "uniform:rate=0.005", 0.005},
		{"Uniform: rate = 1", "uniform:rate=1", 1},
		{"bursty:rate=0.01", "bursty:rate=0.01,burst=100", 0.01},
		{"bursty:rate=1%,burst=20", "bursty:rate=0.01,burst=20", 0.01},
		{"bursty:rate=0,burst=3", "bursty:rate=0,burst=3", 0},
	}
	for _, tt := range tests {
		l, err := ParseLoss(tt.in)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if l.String() != tt.canonical || l.Rate() != tt.rate {
			t.Errorf("%q: got %q rate %g, want %q rate %g", tt.in, l.String(), l.Rate(), tt.canonical, tt.rate)
		}
		checkLossRoundTrip(t, l)
	}
}

var badLosses = []struct{ in, token string }{
	{"", "missing kind"},
	{"drop:0.1", `"drop"`},
	{"none:1", `"1"`},
	{"uniform", "rate="},
	{"uniform:rate=2", `"rate=2"`},
	{"uniform:rate=-0.1", `"rate=-0.1"`},
	{"uniform:rate=abc", `"rate=abc"`},
	{"uniform:rate=0.1,burst=3", `"burst"`},
	{"bursty:0.1", `"0.1"`},
	{"bursty:rate=1", `"rate=1"`},
	{"bursty:rate=0.9,burst=2", `"rate=0.9"`},
	{"bursty:rate=0.1,burst=0.5", `"burst=0.5"`},
	{"bursty:rate=0.1,burst=q", `"burst=q"`},
	{"bursty:rate=0.1,rate=0.2", `"rate=0.2"`},
}

func TestParseLossErrors(t *testing.T) {
	for _, tt := range badLosses {
		t.Run(tt.in, func(t *testing.T) {
			l, err := ParseLoss(tt.in)
			if err == nil {
				t.Fatalf("accepted as %v", l)
			}
			if !strings.Contains(err.Error(), tt.token) {
				t.Errorf("error %q does not name %s", err, tt.token)
			}
		})
	}
}

// checkDelayRoundTrip: the canonical text parses back to the same model.
func checkDelayRoundTrip(t *testing.T, d Delay) {
	t.Helper()
	s := d.String()
	d2, err := ParseDelay(s)
	if err != nil {
		t.Fatalf("canonical %q does not parse: %v", s, err)
	}
	if d2.String() != s {
		t.Fatalf("round trip %q → %q", s, d2.String())
	}
	if m1, m2 := d.Mean(), d2.Mean(); m1 != m2 && !(math.IsNaN(m1) && math.IsNaN(m2)) {
		t.Fatalf("round trip of %q changed the mean %g → %g", s, m1, m2)
	}
}

func checkLossRoundTrip(t *testing.T, l Loss) {
	t.Helper()
	s := l.String()
	l2, err := ParseLoss(s)
	if err != nil {
		t.Fatalf("canonical %q does not parse: %v", s, err)
	}
	if l2.String() != s || l2.Rate() != l.Rate() {
		t.Fatalf("round trip %q → %q", s, l2.String())
	}
}

func FuzzParseDelay(f *testing.F) {
	for _, tt := range badDelays {
		f.Add(tt.in)
	}
	for _, s := range []string{"weibull:mean=0.2us,shape=0.6", "pareto:scale=1us,shape=1.5", "mix:p=0.5,offset=1;exp:1;uniform:min=1,max=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDelay(s)
		if err != nil {
			if d != nil {
				t.Fatal("model and error")
			}
			return
		}
		if m := d.Mean(); math.IsNaN(m) || m < 0 {
			t.Fatalf("%q: mean %g", s, m)
		}
		if sd := d.Stddev(); math.IsNaN(sd) || sd < 0 {
			t.Fatalf("%q: stddev %g", s, sd)
		}
		checkDelayRoundTrip(t, d)
	})
}

func FuzzParseLoss(f *testing.F) {
	for _, tt := range badLosses {
		f.Add(tt.in)
	}
	f.Add("bursty:rate=0.5%,burst=100")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLoss(s)
		if err != nil {
			return
		}
		if r := l.Rate(); !(r >= 0 && r <= 1) {
			t.Fatalf("%q: rate %g", s, r)
		}
		checkLossRoundTrip(t, l)
	})
}
