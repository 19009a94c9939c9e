# Unit tests of the interception layer's lookup rules (shim/hooks/intercept_lookup.c), linked
# against the hooks layer: which wrapper a lookup hands out when the real driver's pointer is
# not one the shim resolved itself (the rule), and that identity wins over the rule.
memshim_criterion_test(NAME test_intercept_lookup
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_intercept_lookup.c
  LIBS shim_hooks)

# The per-thread memory of kernel launches (shim/hooks/launch_memo.c): what makes two launches
# the same one.
memshim_criterion_test(NAME test_intercept_launch_memo
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_intercept_launch_memo.c
  LIBS shim_hooks)

# The scan of a launch's parameter words (shim/hooks/launch_scan.h): its vector form finds the
# candidates the scalar one does, on any bounds and any run length.
memshim_criterion_test(NAME test_intercept_launch_scan
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_intercept_launch_scan.c
  LIBS shim_hooks)
