package ring_test

import (
	"fmt"

	"github.com/ldafwd/ldafwd/ring"
)

func ExampleSPSC() {
	r, err := ring.NewSPSC[int](4)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.EnqueueBulk([]int{1, 2, 3, 4, 5}))  // all or nothing: 5 do not fit in 4
	fmt.Println(r.EnqueueBurst([]int{1, 2, 3, 4, 5})) // as many as fit
	out := make([]int, 3)
	n := r.DequeueBurst(out)
	fmt.Println(n, out[:n], r.Count(), r.FreeCount())
	// Output:
	// 0
	// 4
	// 3 [1 2 3] 1 3
}
