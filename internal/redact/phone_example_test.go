package redact

import (
	"testing"
)

// TestIDExampleWindow: a 10-11-digit id that the text introduces as an id a
// few words before an exemplifier is not a phone (issue 26 §1); what
// introduces the number decides, so a contact word in the window keeps it a
// phone.
func TestIDExampleWindow(t *testing.T) {
	runDetect(t, Options{}, []detectCase{
		{"e.g. after an id sentence", "Order ids have ten digits, e.g. 4159977512.", nil},
		{"e.g. starts the next sentence", "Ticket ids look like this. E.g. 2125550143", nil},
		{"e.g. on the next line", "Ticket ids look like this.\nE.g. 2125550143", nil},
		{"for example", "Our order numbers are 10 digits long, for example 4159977512", nil},
		{"look like", "IDs in the CRM look like 2125550143", nil},
		{"singular id", "the id looks like 2125550143", nil},
		{"e.g. with a comma", "Order ids are ten digits, e.g., 4159977512", nil},
		{"in brackets", "Invoice ids are 11 digits (e.g. 21987654321)", nil},
		{"ex.: in Portuguese", "Os números de pedido têm 10 dígitos, ex.: 4159977512", nil},
		{"por exemplo", "Os protocolos têm 10 dígitos, por exemplo 4159977512", nil},
		// guards
		{"phone numbers look like", "Customer phone numbers look like e.g. 2125550143", phone},
		{"no id word", "Use a format like 2125550143 for the phone", phone},
		{"her number", "her number, e.g. 2125550143", phone},
		{"contact word after the id", "Order 4471: customer phone e.g. 2125550143", phone},
		{"second clause is a contact", "Order ids are like 4159977512; customer phone like 2125550143", phone},
		{"call", "Call e.g. 2125550143", phone},
		{"id two sentences back, contact in between", "Ticket 4471 was closed. The buyer left e.g. 2125550143", phone},
		{"area code is not an id word", "Mobile numbers need the area code, e.g. 4155550167", phone},
		{"area code without contact word", "Save it with the area code, e.g. 4155550167", phone},
		{"id three sentences back", "Order ids are long. Fine. Then e.g. 2125550143", phone},
	})
}
