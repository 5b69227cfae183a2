"""The REST layer (DRF): thin views over the services in fleet/, jobs/, board/ and certification/."""
