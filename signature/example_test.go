package signature_test

import (
	"fmt"

	"github.com/hookjet/hookjet/signature"
)

func ExampleSigner_Sign() {
	// The Standard Webhooks specification's example.
	key, err := signature.DecodeSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	s := signature.NewSigner(key)
	fmt.Println(s.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`)))
	// Output: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}

func ExampleSigner_Verify() {
	key, err := signature.DecodeSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	s := signature.NewSigner(key)
	sigs := []string{"v2,ignored v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}
	fmt.Println(s.Verify("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", sigs, []byte(`{"test": 2432232314}`)))
	fmt.Println(s.Verify("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265331", sigs, []byte(`{"test": 2432232314}`)))
	// Output:
	// true
	// false
}
