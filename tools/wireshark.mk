# The Wireshark dissector (tools/wireshark/mrc.lua): nothing to build;
# scripts/install.sh installs it, tests/test_wireshark.c checks every field
# against the encoders, tests/root/wireshark.sh decodes a fabric capture.
ROOT_TESTS += tests/root/wireshark.sh
