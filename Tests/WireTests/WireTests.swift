// WireTests
