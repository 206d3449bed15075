package attempt

import "testing"

func TestDeliveriesDiscardEndsTheDeadLetteredDelivery(t *testing.T) {
	recs := []Record{
		{EventID: "e", Endpoint: "crm", Attempt: 1, Trigger: TriggerDelivery, Delivery: "7", Class: ClassSuccess},
		{EventID: "e", Endpoint: "crm", Attempt: 1, Trigger: TriggerReplay, Delivery: "r3", Class: "permanent", Status: 400},
		{EventID: "e", Endpoint: "crm", Attempt: 1, Trigger: TriggerReplay, Delivery: "r3", Class: ClassDeadLetter, Reason: "permanent"},
		{EventID: "e", Endpoint: "crm", Attempt: 1, Class: ClassDiscarded, Reason: "permanent"},
	}
	got := Deliveries(recs)
	if len(got) != 2 {
		t.Fatalf("%d deliveries, want 2 (the discard ends the replay): %+v", len(got), got)
	}
	if got[0].State != StateDelivered || got[1].State != StateDiscarded || len(got[1].Records) != 3 {
		t.Errorf("states %q %q (records %d), want delivered, discarded (3)", got[0].State, got[1].State, len(got[1].Records))
	}
}

func TestDeliveriesDiscardWithoutADeadLetterStandsAlone(t *testing.T) {
	got := Deliveries([]Record{{EventID: "e", Endpoint: "crm", Attempt: 2, Class: ClassDiscarded}})
	if len(got) != 1 || got[0].State != StateDiscarded {
		t.Errorf("got %+v, want one discarded delivery", got)
	}
}
