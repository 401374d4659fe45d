/* test_stepname: the one definition of a step's name (common/tp_stepname), which the analyses,
 * the collector's --idle count and the live store share. */
#include <string.h>

#include "tp_stepname.h"
#include "tp_test.h"

static void test_names(void) {
    static const char *const yes[] = {
        "step",          "STEP",       "train_step",     "Train_Step",
        "training_step", "train step", "ProfilerStep#0", "ProfilerStep#123"};
    static const char *const no[] = {"",
                                     "steps",
                                     "step ",
                                     "train",
                                     "Profiler",
                                     "profilerstep#3",
                                     "validation_step",
                                     "stepper",
                                     "my_train_step"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        CHECK(tp_step_name(yes[i]) == 1);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        CHECK(tp_step_name(no[i]) == 0);
    CHECK(tp_step_name(NULL) == 0);
    /* by length, no NUL needed: a name inside a longer buffer */
    CHECK(tp_step_name_n("train_step_x", 10) == 1);
    CHECK(tp_step_name_n("train_step_x", 12) == 0);
    CHECK(tp_step_name_n("ProfilerStep#7 and more", 14) == 1);
}

int main(void) {
    TP_RUN(test_names);
    return tp_test_summary();
}
