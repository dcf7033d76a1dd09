// TransportTests
