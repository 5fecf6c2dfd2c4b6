# Views tests: the timeline's pure layout, the widgets on generated and recorded traces, and every
# item model under QAbstractItemModelTester.
if(NOT TARGET warpline_views)
    return()
endif()
# The layout and widget tests open generated multi-rank sessions (bench/rankjobgen.h).
warpline_add_test(NAME tst_timelinelayout SOURCES tst_timelinelayout.cpp
                  LIBS warpline_views warpline_rankjobgen LABELS views)
warpline_add_test(NAME tst_timelinewidget SOURCES tst_timelinewidget.cpp
                  LIBS warpline_views warpline_format warpline_rankjobgen LABELS views)
warpline_add_test(NAME tst_reportmodels SOURCES tst_reportmodels.cpp
                  LIBS warpline_views warpline_format LABELS views)
