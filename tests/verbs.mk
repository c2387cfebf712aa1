# mrcd linked against a fake libibverbs that carries UD datagrams over
# kernel UDP (tests/support/fake_verbs_net.c defines mrc__dp_verbs_real, so
# datapath/verbs_ops.c is not taken from libmrccore.a): the verbs
# provider's first contact inside real daemons on the emulated fabric
# (tests/root/verbs_fake.sh), where there is no RDMA device.  Never
# installed.  (datapath/datapath.mk, read before this file, sets
# MRC_HAVE_VERBS.)
ifeq ($(MRC_HAVE_VERBS),1)
MRCD_FAKEVERBS := $(B)/tests/mrcd-fakeverbs
all: $(MRCD_FAKEVERBS)
$(B)/tests/support/fake_verbs_net.o: CFLAGS_ALL += -DMRC_HAVE_VERBS=1
$(MRCD_FAKEVERBS): $(B)/tests/support/fake_verbs_net.o $(mrcd_SRCS:%.c=$(B)/%.o) $(B)/libmrccore.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)
ROOT_TESTS += tests/root/verbs_fake.sh
endif
