/*
 * The Chinese claim grammar (Simplified and Traditional): one sentence in, claims out.
 *
 * Chinese verbs do not inflect, so a claim is recognised by its aspect and its result: the
 * perfective 了, the experiential 过, 已/已经 before the verb, 完成/成功 after it, a
 * resultative complement (保存到, 写入, 导出为) with a first-person subject, or a result
 * phrase (返回 2, 结果是 391, 显示…). The same clause must not carry a marker of a future
 * or plan (会, 将 before a verb, 要, 打算, 准备, 下一步), a modal (可以, 能, 应该, 需要),
 * a hedge (可能, 也许), a negation (没(有), 未, 不, 无法, 别), a condition (如果, 若, 要是,
 * …的话), a time clause that has not happened yet (…之后), an imperative (请), or a
 * question (吗, 是否, 要不要, a final ？).
 *
 * The words are read by longest match over a small lexicon that also lists the compounds
 * that merely contain a marker (会议 is not 会, 功能 is not 能, 已知 is not 已, 为了 is not
 * 了, 将 before a noun marks the object like 把), so each character is read once.
 *
 * Claims:
 *   tool      我调用了 calculator; 用 file_search 搜索了…; 经/通过 web_search 查询…; 根据 X 的
 *             结果…; calculator 返回 2; get_weather 显示…; X 的输出是 3.5 (failures: 失败, 超时)
 *   files     a write or delete verb and a path in one clause, realis as above
 *   function  添加/实现/定义 … an identifier with 函数/方法 or name(), and its file
 *   checks    测试(都)通过(了), 构建成功, 编译通过, lint 检查通过, 没有类型错误
 */
#include "claims_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define ITEMS_MAX 600

/* Categories of a Chinese word (bits). */
#define Z_NEG   (1U << 0)
#define Z_FUT   (1U << 1)
#define Z_MODAL (1U << 2)
#define Z_HEDGE (1U << 3)
#define Z_COND  (1U << 4)
#define Z_TIME  (1U << 5) /* …之后: a time clause */
#define Z_Q     (1U << 6)
#define Z_IMP   (1U << 7)
#define Z_PERF  (1U << 8) /* 了 已 已经 完成 成功 刚才 */
#define Z_FAIL  (1U << 9)
#define Z_USE   (1U << 10) /* 调用 使用 运行 执行 */
#define Z_VIA   (1U << 11) /* 经 通过 透过 借助 利用 用 */
#define Z_FRAME (1U << 12) /* 根据 依据 按照 */
#define Z_RES   (1U << 13) /* 返回 输出 找到 算出 得到 */
#define Z_SAY   (1U << 14) /* 显示 表明 告诉 */
#define Z_RESN  (1U << 15) /* 结果 输出 返回值 数据 */
#define Z_WRITE (1U << 16)
#define Z_DEL   (1U << 17)
#define Z_FN    (1U << 18) /* 添加 实现 定义 */
#define Z_FNN   (1U << 19) /* 函数 方法 */
#define Z_TEST  (1U << 20)
#define Z_BUILD (1U << 21)
#define Z_LINT  (1U << 22)
#define Z_TYPES (1U << 23)
#define Z_PASS  (1U << 24) /* 通过 成功 全绿 */
#define Z_ERRN  (1U << 25) /* 错误 警告 问题 */
#define Z_NO    (1U << 26) /* 没有 无 零 (before an issue word) */
#define Z_I     (1U << 27) /* 我 我们 */
#define Z_CONJ  (1U << 28) /* 但 但是 不过 而 然后: a new clause */
#define Z_RESC  (1U << 29) /* a resultative complement: 到 入 为 至 在 成 进 */
#define Z_BA    (1U << 30) /* 把, 将 before a noun */
#define Z_GUO   (1U << 31) /* 过/過: experiential only right after a verb */

struct zword {
    const char *s;
    uint32_t cat;
};

/* 0: a compound that only looks like a marker; it is read and ignored. */
static struct zword lexicon[] = {
    /* negation */
    {"没", Z_NEG},
    {"沒", Z_NEG},
    {"没有", Z_NEG | Z_NO},
    {"沒有", Z_NEG | Z_NO},
    {"忘了", Z_NEG},
    {"忘记", Z_NEG},
    {"忘記", Z_NEG},
    {"未", Z_NEG},
    {"不", Z_NEG},
    {"无法", Z_NEG},
    {"無法", Z_NEG},
    {"无", Z_NEG | Z_NO},
    {"無", Z_NEG | Z_NO},
    {"别", Z_NEG | Z_IMP},
    {"別", Z_NEG | Z_IMP},
    {"并未", Z_NEG},
    {"並未", Z_NEG},
    {"从未", Z_NEG},
    {"從未", Z_NEG},
    {"尚未", Z_NEG},
    {"还没", Z_NEG},
    {"還沒", Z_NEG},
    {"非", Z_NEG},
    {"不要", Z_NEG | Z_IMP},
    {"不能", Z_NEG},
    {"勿", Z_NEG | Z_IMP},
    {"不会", Z_NEG | Z_FUT},
    {"不會", Z_NEG | Z_FUT},
    {"零", Z_NO},
    {"拒绝", Z_FAIL},
    {"拒絕", Z_FAIL},
    /* future, plans, desire */
    {"会", Z_FUT},
    {"會", Z_FUT},
    {"将", Z_FUT},
    {"將", Z_FUT},
    {"要", Z_FUT},
    {"打算", Z_FUT},
    {"准备", Z_FUT},
    {"準備", Z_FUT},
    {"计划", Z_FUT},
    {"計劃", Z_FUT},
    {"計畫", Z_FUT},
    {"即将", Z_FUT},
    {"即將", Z_FUT},
    {"将要", Z_FUT},
    {"將要", Z_FUT},
    {"将会", Z_FUT},
    {"將會", Z_FUT},
    {"稍后", Z_FUT},
    {"稍後", Z_FUT},
    {"待会", Z_FUT},
    {"待會", Z_FUT},
    {"接下来", Z_FUT},
    {"接下來", Z_FUT},
    {"下一步", Z_FUT},
    {"想", Z_FUT},
    {"想要", Z_FUT},
    {"明天", Z_FUT},
    {"马上", Z_FUT},
    {"馬上", Z_FUT},
    {"将来", Z_FUT},
    {"將來", Z_FUT},
    {"未来", Z_FUT},
    {"未來", Z_FUT},
    {"之后会", Z_FUT},
    {"回头", Z_FUT},
    {"回頭", Z_FUT},
    /* modals */
    {"可以", Z_MODAL},
    {"可", Z_MODAL},
    {"能", Z_MODAL},
    {"能够", Z_MODAL},
    {"能夠", Z_MODAL},
    {"应该", Z_MODAL | Z_HEDGE},
    {"應該", Z_MODAL | Z_HEDGE},
    {"应当", Z_MODAL},
    {"應當", Z_MODAL},
    {"应", Z_MODAL},
    {"應", Z_MODAL},
    {"需要", Z_MODAL},
    {"必须", Z_MODAL},
    {"必須", Z_MODAL},
    {"建议", Z_MODAL},
    {"建議", Z_MODAL},
    {"最好", Z_MODAL},
    {"不妨", Z_MODAL},
    {"务必", Z_IMP},
    {"務必", Z_IMP},
    {"得以", 0},
    /* hedges */
    {"可能", Z_HEDGE},
    /* what a picture or an example shows is not a run */
    {"截图", Z_HEDGE},
    {"截圖", Z_HEDGE},
    {"示例", Z_HEDGE},
    {"範例", Z_HEDGE},
    {"觉得", Z_HEDGE},
    {"覺得", Z_HEDGE},
    {"默认", Z_HEDGE},
    {"默認", Z_HEDGE},
    {"通常", Z_HEDGE},
    {"一般", Z_HEDGE},
    {"总是", Z_HEDGE},
    {"總是", Z_HEDGE},
    {"每次", Z_HEDGE},
    {"每当", Z_HEDGE},
    {"每當", Z_HEDGE},
    {"往往", Z_HEDGE},
    {"也许", Z_HEDGE},
    {"也許", Z_HEDGE},
    {"或许", Z_HEDGE},
    {"或許", Z_HEDGE},
    {"大概", Z_HEDGE},
    {"似乎", Z_HEDGE},
    {"好像", Z_HEDGE},
    {"估计", Z_HEDGE},
    {"估計", Z_HEDGE},
    {"大约", 0},
    {"大約", 0},
    /* conditions and time clauses */
    {"如果", Z_COND},
    {"假如", Z_COND},
    {"若", Z_COND},
    {"要是", Z_COND},
    {"万一", Z_COND},
    {"萬一", Z_COND},
    {"倘若", Z_COND},
    {"如若", Z_COND},
    {"只要", Z_COND},
    {"一旦", Z_COND},
    {"的话", Z_COND},
    {"的話", Z_COND},
    {"假设", Z_COND},
    {"假設", Z_COND},
    {"除非", Z_COND},
    {"之后", Z_TIME},
    {"之後", Z_TIME},
    {"以后", Z_TIME},
    {"以後", Z_TIME},
    {"后", Z_TIME},
    {"後", Z_TIME},
    {"之前", Z_TIME},
    {"以前", Z_TIME},
    {"的时候", Z_TIME},
    {"的時候", Z_TIME},
    {"等到", Z_TIME | Z_COND},
    /* questions */
    {"吗", Z_Q},
    {"嗎", Z_Q},
    {"么", Z_Q},
    {"麼", Z_Q},
    {"呢", Z_Q},
    {"是否", Z_Q},
    {"要不要", Z_Q},
    {"需不需要", Z_Q},
    {"能否", Z_Q},
    {"可否", Z_Q},
    {"是不是", Z_Q},
    {"有没有", Z_Q},
    {"有沒有", Z_Q},
    {"怎么", Z_Q},
    {"怎麼", Z_Q},
    {"如何", Z_Q},
    {"什么", Z_Q},
    {"什麼", Z_Q},
    {"为什么", Z_Q},
    {"為什麼", Z_Q},
    {"哪", Z_Q},
    {"好不好", Z_Q},
    {"行不行", Z_Q},
    /* imperatives */
    {"请", Z_IMP},
    {"請", Z_IMP},
    {"麻烦", Z_IMP},
    {"麻煩", Z_IMP},
    {"记得", Z_IMP},
    {"記得", Z_IMP},
    {"试试", Z_IMP},
    {"試試", Z_IMP},
    {"别忘了", Z_IMP},
    {"別忘了", Z_IMP},
    /* done */
    {"了", Z_PERF},
    {"已", Z_PERF},
    {"已经", Z_PERF},
    {"已經", Z_PERF},
    {"曾", Z_PERF},
    {"曾经", Z_PERF},
    {"曾經", Z_PERF},
    {"完成", Z_PERF},
    {"完毕", Z_PERF},
    {"完畢", Z_PERF},
    {"成功", Z_PERF | Z_PASS},
    {"刚才", Z_PERF},
    {"剛才", Z_PERF},
    {"刚刚", Z_PERF},
    {"剛剛", Z_PERF},
    {"好了", Z_PERF},
    {"准备好", Z_PERF},
    {"準備好", Z_PERF},
    {"就绪", Z_PERF},
    {"就緒", Z_PERF},
    {"刚", Z_PERF},
    {"剛", Z_PERF},
    {"过", Z_GUO},
    {"過", Z_GUO},
    /* failure */
    {"失败", Z_FAIL},
    {"拦截", Z_FAIL},
    {"攔截", Z_FAIL},
    {"阻止", Z_FAIL},
    {"阻挡", Z_FAIL},
    {"阻擋", Z_FAIL},
    {"失敗", Z_FAIL},
    {"出错", Z_FAIL},
    {"出錯", Z_FAIL},
    {"报错", Z_FAIL | Z_ERRN},
    {"報錯", Z_FAIL | Z_ERRN},
    {"超时", Z_FAIL},
    {"超時", Z_FAIL},
    {"异常", Z_FAIL},
    {"異常", Z_FAIL},
    {"崩溃", Z_FAIL},
    {"崩潰", Z_FAIL},
    {"错误", Z_ERRN},
    {"錯誤", Z_ERRN},
    {"警告", Z_ERRN},
    {"问题", Z_ERRN},
    {"問題", Z_ERRN},
    /* using a tool */
    {"调用", Z_USE},
    {"調用", Z_USE},
    {"呼叫", Z_USE},
    {"问", Z_USE},
    {"問", Z_USE},
    {"询问", Z_USE},
    {"詢問", Z_USE},
    {"使用", Z_USE},
    {"运行", Z_USE},
    {"運行", Z_USE},
    {"执行", Z_USE},
    {"執行", Z_USE},
    {"跑", Z_USE},
    {"启动", Z_USE},
    {"啟動", Z_USE},
    {"触发", Z_USE},
    {"觸發", Z_USE},
    {"采用", Z_USE},
    {"採用", Z_USE},
    {"用", Z_VIA | Z_USE},
    {"经", Z_VIA},
    {"經", Z_VIA},
    {"经过", Z_VIA},
    {"經過", Z_VIA},
    {"经由", Z_VIA},
    {"經由", Z_VIA},
    {"通过", Z_VIA | Z_PASS},
    {"通過", Z_VIA | Z_PASS},
    {"透过", Z_VIA},
    {"透過", Z_VIA},
    {"借助", Z_VIA},
    {"利用", Z_VIA},
    {"藉由", Z_VIA},
    {"凭借", Z_VIA},
    {"憑藉", Z_VIA},
    {"根据", Z_FRAME},
    {"来自", Z_FRAME},
    {"來自", Z_FRAME},
    {"出自", Z_FRAME},
    {"根據", Z_FRAME},
    {"依据", Z_FRAME},
    {"依據", Z_FRAME},
    {"按照", Z_FRAME},
    {"据", Z_FRAME},
    {"據", Z_FRAME},
    {"基于", Z_FRAME},
    {"基於", Z_FRAME},
    /* results */
    {"返回", Z_RES},
    {"回传", Z_RES},
    {"回傳", Z_RES},
    {"传回", Z_RES},
    {"傳回", Z_RES},
    {"输出", Z_RES | Z_RESN},
    {"輸出", Z_RES | Z_RESN},
    {"给出", Z_RES},
    {"給出", Z_RES},
    {"找到", Z_RES},
    {"查到", Z_RES},
    {"搜到", Z_RES},
    {"算出", Z_RES},
    {"算出来", Z_RES},
    {"算出來", Z_RES},
    {"得出", Z_RES},
    {"计算出", Z_RES},
    {"計算出", Z_RES},
    {"发现", Z_RES},
    {"發現", Z_RES},
    {"列出", Z_RES},
    {"转换", Z_RES},
    {"轉換", Z_RES},
    {"转成", Z_RES},
    {"轉成", Z_RES},
    {"翻译", Z_RES},
    {"翻譯", Z_RES},
    {"发送", Z_RES},
    {"發送", Z_RES},
    {"发出", Z_RES},
    {"發出", Z_RES},
    {"寄出", Z_RES},
    {"回复", Z_RES},
    {"回覆", Z_RES},
    {"得到", Z_RES},
    {"获得", Z_RES},
    {"獲得", Z_RES},
    {"计算", Z_RES},
    {"計算", Z_RES},
    {"算", Z_RES},
    {"搜索", Z_RES},
    {"搜尋", Z_RES},
    {"查找", Z_RES},
    {"查询", Z_RES | Z_USE},
    {"查詢", Z_RES | Z_USE},
    {"检索", Z_RES},
    {"檢索", Z_RES},
    {"获取", Z_RES},
    {"獲取", Z_RES},
    {"取得", Z_RES},
    {"产出", Z_RES},
    {"查", Z_RES},
    {"搜", Z_RES},
    {"產出", Z_RES},
    {"显示", Z_SAY},
    {"顯示", Z_SAY},
    {"表明", Z_SAY},
    {"指出", Z_SAY},
    {"告诉", Z_SAY},
    {"告訴", Z_SAY},
    {"报告", Z_SAY},
    {"報告", Z_SAY},
    {"提示", Z_SAY},
    {"确认", Z_SAY},
    {"確認", Z_SAY},
    {"说", Z_SAY},
    {"說", Z_SAY},
    {"表示", Z_SAY},
    /* what someone else says is not the speaker's claim */
    {"声称", Z_HEDGE},
    {"聲稱", Z_HEDGE},
    {"据说", Z_HEDGE},
    {"據說", Z_HEDGE},
    {"听说", Z_HEDGE},
    {"聽說", Z_HEDGE},
    {"结果", Z_RESN},
    {"結果", Z_RESN},
    {"返回值", Z_RESN},
    {"回传值", Z_RESN},
    {"回傳值", Z_RESN},
    {"数据", Z_RESN},
    {"數據", Z_RESN},
    {"资料", Z_RESN},
    {"資料", Z_RESN},
    {"答案", Z_RESN},
    {"响应", Z_RESN},
    {"響應", Z_RESN},
    {"回应", Z_RESN},
    {"回應", Z_RESN},
    {"结论", Z_RESN},
    {"結論", Z_RESN},
    /* files written */
    {"写入", Z_WRITE | Z_RESC},
    {"寫入", Z_WRITE | Z_RESC},
    {"写到", Z_WRITE | Z_RESC},
    {"寫到", Z_WRITE | Z_RESC},
    {"写进", Z_WRITE | Z_RESC},
    {"寫進", Z_WRITE | Z_RESC},
    {"写", Z_WRITE | Z_FN},
    {"寫", Z_WRITE | Z_FN},
    {"保存", Z_WRITE},
    {"储存", Z_WRITE},
    {"儲存", Z_WRITE},
    {"存储", Z_WRITE},
    {"存儲", Z_WRITE},
    {"存入", Z_WRITE | Z_RESC},
    {"存到", Z_WRITE | Z_RESC},
    {"存放", Z_WRITE},
    {"存", Z_WRITE},
    {"导出", Z_WRITE},
    {"導出", Z_WRITE},
    {"汇出", Z_WRITE},
    {"匯出", Z_WRITE},
    {"生成", Z_WRITE | Z_RES},
    {"产生", Z_WRITE | Z_RES},
    {"產生", Z_WRITE | Z_RES},
    {"创建", Z_WRITE | Z_FN},
    {"創建", Z_WRITE | Z_FN},
    {"建立", Z_WRITE | Z_FN},
    {"新建", Z_WRITE},
    {"新增", Z_WRITE | Z_FN},
    {"更新", Z_WRITE},
    {"修改", Z_WRITE},
    {"改", Z_WRITE},
    {"编辑", Z_WRITE},
    {"編輯", Z_WRITE},
    {"改写", Z_WRITE},
    {"改寫", Z_WRITE},
    {"覆盖", Z_WRITE},
    {"覆蓋", Z_WRITE},
    {"追加", Z_WRITE},
    {"添加", Z_WRITE | Z_FN},
    {"加入", Z_WRITE | Z_FN},
    {"记录", Z_WRITE},
    {"記錄", Z_WRITE},
    {"放到", Z_WRITE | Z_RESC},
    {"放在", Z_WRITE | Z_RESC},
    {"放进", Z_WRITE | Z_RESC},
    {"放進", Z_WRITE | Z_RESC},
    {"另存为", Z_WRITE | Z_RESC},
    {"另存為", Z_WRITE | Z_RESC},
    {"下载", Z_WRITE},
    {"下載", Z_WRITE},
    {"复制", Z_WRITE},
    {"複製", Z_WRITE},
    {"移动", Z_WRITE},
    {"搬", Z_WRITE},
    {"补全", Z_WRITE},
    {"補全", Z_WRITE},
    {"填写", Z_WRITE},
    {"填寫", Z_WRITE},
    {"移動", Z_WRITE},
    {"重命名", Z_WRITE},
    {"修复", Z_WRITE},
    {"修復", Z_WRITE},
    {"修正", Z_WRITE},
    {"改正", Z_WRITE},
    {"更正", Z_WRITE},
    {"重构", Z_WRITE | Z_FN},
    {"重構", Z_WRITE | Z_FN},
    {"调整", Z_WRITE},
    {"調整", Z_WRITE},
    {"加", Z_WRITE | Z_FN},
    /* functions */
    {"实现", Z_FN},
    {"實現", Z_FN},
    {"實作", Z_FN},
    {"实作", Z_FN},
    {"定义", Z_FN},
    {"定義", Z_FN},
    {"编写", Z_FN | Z_WRITE},
    {"編寫", Z_FN | Z_WRITE},
    {"增加", Z_FN | Z_WRITE},
    {"引入", Z_FN},
    {"补充", Z_FN | Z_WRITE},
    {"補充", Z_FN | Z_WRITE},
    {"函数", Z_FNN},
    {"函數", Z_FNN},
    {"函式", Z_FNN},
    {"方法", Z_FNN},
    /* files deleted */
    {"删除", Z_DEL},
    {"刪除", Z_DEL},
    {"移除", Z_DEL},
    {"删掉", Z_DEL},
    {"刪掉", Z_DEL},
    {"清除", Z_DEL},
    {"去掉", Z_DEL},
    {"删", Z_DEL},
    {"刪", Z_DEL},
    {"清理", Z_DEL},
    {"清空", Z_DEL},
    {"清掉", Z_DEL},
    /* checks */
    {"测试", Z_TEST},
    {"測試", Z_TEST},
    {"用例", Z_TEST},
    {"构建", Z_BUILD},
    {"構建", Z_BUILD},
    {"建置", Z_BUILD},
    {"编译", Z_BUILD},
    {"編譯", Z_BUILD},
    {"代码检查", Z_LINT},
    {"代碼檢查", Z_LINT},
    {"程式碼檢查", Z_LINT},
    {"静态检查", Z_LINT},
    {"靜態檢查", Z_LINT},
    {"风格检查", Z_LINT},
    {"風格檢查", Z_LINT},
    {"类型检查", Z_TYPES},
    {"類型檢查", Z_TYPES},
    {"型別檢查", Z_TYPES},
    {"类型", Z_TYPES},
    {"類型", Z_TYPES},
    {"型別", Z_TYPES},
    {"全绿", Z_PASS},
    {"跑通", Z_PASS},
    {"跑过", Z_PASS},
    {"跑過", Z_PASS},
    {"全綠", Z_PASS},
    {"没问题", Z_PASS},
    {"沒問題", Z_PASS},
    {"顺利", Z_PASS},
    {"順利", Z_PASS},
    /* the rest */
    {"我", Z_I},
    {"我们", Z_I},
    {"我們", Z_I},
    {"把", Z_BA},
    {"但", Z_CONJ},
    {"但是", Z_CONJ},
    {"不过", Z_CONJ},
    {"不過", Z_CONJ},
    {"然后", Z_CONJ},
    {"然後", Z_CONJ},
    {"而且", Z_CONJ},
    {"并且", Z_CONJ},
    {"並且", Z_CONJ},
    {"同时", Z_CONJ},
    {"同時", Z_CONJ},
    {"因为", Z_CONJ},
    {"因為", Z_CONJ},
    {"所以", Z_CONJ},
    {"让", Z_MODAL},
    {"讓", Z_MODAL},
    {"叫", Z_MODAL},
    {"到", Z_RESC},
    {"入", Z_RESC},
    {"为", Z_RESC},
    {"為", Z_RESC},
    {"至", Z_RESC},
    {"在", Z_RESC},
    {"成", Z_RESC},
    {"进", Z_RESC},
    {"進", Z_RESC},
    /* compounds that only contain a marker */
    {"会议", 0},
    {"會議", 0},
    {"会话", 0},
    {"會話", 0},
    {"会员", 0},
    {"會員", 0},
    {"会计", 0},
    {"會計", 0},
    {"机会", 0},
    {"機會", 0},
    {"社会", 0},
    {"社會", 0},
    {"学会", 0},
    {"學會", 0},
    {"协会", 0},
    {"協會", 0},
    {"大会", 0},
    {"大會", 0},
    {"聚会", 0},
    {"聚會", 0},
    {"体会", 0},
    {"體會", 0},
    {"误会", 0},
    {"誤會", 0},
    {"理会", 0},
    {"理會", 0},
    {"晚会", 0},
    {"晚會", 0},
    {"功能", 0},
    {"性能", 0},
    {"技能", 0},
    {"智能", 0},
    {"能力", 0},
    {"能量", 0},
    {"本能", 0},
    {"效能", 0},
    {"职能", 0},
    {"職能", 0},
    {"才能", 0},
    {"重要", 0},
    {"主要", 0},
    {"摘要", 0},
    {"概要", 0},
    {"要求", 0},
    {"要点", 0},
    {"要點", 0},
    {"必要", 0},
    {"要素", 0},
    {"为了", 0},
    {"為了", 0},
    {"了解", 0},
    {"除了", 0},
    {"不错", 0},
    {"不錯", 0},
    {"不同", 0},
    {"不少", 0},
    {"不久", 0},
    {"不仅", 0},
    {"不僅", 0},
    {"不断", 0},
    {"不斷", 0},
    {"不管", 0},
    {"不足", 0},
    {"别人", 0},
    {"別人", 0},
    {"区别", 0},
    {"區別", 0},
    {"类别", 0},
    {"類別", 0},
    {"分别", 0},
    {"分別", 0},
    {"特别", 0},
    {"特別", 0},
    {"识别", 0},
    {"識別", 0},
    {"级别", 0},
    {"級別", 0},
    {"性别", 0},
    {"性別", 0},
    {"错别字", 0},
    {"錯別字", 0},
    {"告别", 0},
    {"告別", 0},
    {"个别", 0},
    {"個別", 0},
    {"差别", 0},
    {"差別", 0},
    {"非常", 0},
    {"若干", 0},
    {"用于", 0},
    {"用於", 0},
    {"用来", 0},
    {"用來", 0},
    {"用途", 0},
    {"用户", 0},
    {"用戶", 0},
    {"使用者", 0},
    {"费用", 0},
    {"費用", 0},
    {"作用", 0},
    {"适用", 0},
    {"適用", 0},
    {"常用", 0},
    {"可用", 0},
    {"有用", 0},
    {"应用", 0},
    {"應用", 0},
    {"引用", 0},
    {"信用", 0},
    {"最后", 0},
    {"最後", 0},
    {"目前", 0},
    {"当前", 0},
    {"當前", 0},
    {"临时", 0},
    {"臨時", 0},
    {"时间", 0},
    {"時間", 0},
    {"及时", 0},
    {"及時", 0},
    {"实时", 0},
    {"實時", 0},
    {"暂时", 0},
    {"暫時", 0},
    {"过程", 0},
    {"過程", 0},
    {"过去", 0},
    {"過去", 0},
    {"超过", 0},
    {"超過", 0},
    {"存在", 0},
    {"思想", 0},
    {"理想", 0},
    {"想法", 0},
    {"无论", 0},
    {"無論", 0},
    {"响应", Z_RESN},
    {"对应", 0},
    {"對應", 0},
    {"相应", 0},
    {"相應", 0},
    {"反应", 0},
    {"反應", 0},
    {"供应", 0},
    {"供應", 0},
    {"适应", 0},
    {"適應", 0},
    {"已知", 0},
    {"已有", 0},
    {"不是", Z_NEG},
    {"后台", 0},
    {"後台", 0},
    {"后端", 0},
    {"後端", 0},
    {"前后", 0},
    {"前後", 0},
    {"罢了", 0},
    {"可见", 0},
    {"可見", 0},
    {"可视", 0},
    {"可視", 0},
    {"不用", Z_NEG | Z_IMP},
    {"要么", 0},
    {"要麼", 0},
    {"成为", 0},
    {"成為", 0},
    {"成员", 0},
    {"成員", 0},
    {"成本", 0},
    {"入口", 0},
    {"在线", 0},
    {"在線", 0},
    {"为止", 0},
    {"為止", 0},
    {"以为", Z_HEDGE},
    {"以為", Z_HEDGE},
    {"认为", Z_HEDGE},
    {"認為", Z_HEDGE},
    {"作为", 0},
    {"作為", 0},
    {"因为", Z_CONJ},
    {"行为", 0},
    {"行為", 0},
    {"变成", 0},
    {"變成", 0},
    {"一会", 0},
    {"一會", 0},
    {"会儿", 0},
    {"會兒", 0},
    {"用例", Z_TEST},
    {"通知", 0},
    {"过滤", 0},
    {"過濾", 0},
    {"过期", 0},
    {"過期", 0},
    {"不过", Z_CONJ},
};

#define NLEX REIN_ARRAY_SIZE(lexicon)

static pthread_once_t once = PTHREAD_ONCE_INIT;

static int cmp_lex(const void *a, const void *b)
{
    return strcmp(((const struct zword *)a)->s, ((const struct zword *)b)->s);
}

static void build(void)
{
    qsort(lexicon, NLEX, sizeof(lexicon[0]), cmp_lex);
}

/* The longest lexicon word at s[i..n): its category (and *len), or *len 0. */
static uint32_t lookup(const char *s, size_t n, size_t i, size_t *len)
{
    size_t cl = rein__claims_utf8_len(s, n, i), lo = 0, hi = NLEX, best = 0;
    uint32_t cat = 0;

    /* all entries starting with this character are adjacent in the sorted table */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strncmp(lexicon[mid].s, s + i, cl) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < NLEX && strncmp(lexicon[lo].s, s + i, cl) == 0; lo++) {
        size_t k = strlen(lexicon[lo].s);
        if (k > best && i + k <= n && memcmp(lexicon[lo].s, s + i, k) == 0) {
            best = k;
            cat = lexicon[lo].cat;
        }
    }
    *len = best;
    return cat;
}

/* ---- items ---- */

enum { ZI_LEX = 1, ZI_TOOL, ZI_PATH, ZI_NAME, ZI_VALUE, ZI_WORD, ZI_STOP, ZI_ENUM };

struct item {
    uint32_t pos, end; /* bytes in the sentence */
    uint32_t cat;      /* ZI_LEX: Z_* */
    uint8_t type;
    int16_t tool;
    uint16_t tok;
};

struct zh {
    struct rein__sent *st;
    struct item it[ITEMS_MAX];
    size_t n;
    uint16_t clause[ITEMS_MAX];
    rein__emit_fn emit;
    void *ud;
    bool ok;
    bool question; /* the whole sentence asks */
};

static void add(struct zh *z, uint8_t type, uint32_t pos, uint32_t end, uint32_t cat, int tool,
                size_t tok)
{
    struct item *it;

    if (z->n >= ITEMS_MAX)
        return;
    it = &z->it[z->n++];
    it->type = type;
    it->pos = pos;
    it->end = end;
    it->cat = cat;
    it->tool = (int16_t)tool;
    it->tok = (uint16_t)tok;
}

static bool in_words(const char *const *list, size_t n, const char *w, size_t wn)
{
    for (size_t k = 0; k < n; k++) {
        if (strlen(list[k]) == wn && memcmp(list[k], w, wn) == 0)
            return true;
    }
    return false;
}

static uint32_t ascii_check_word(const struct rein__sent *st, const struct rein__tok *t)
{
    static const char *const lint[] = {"lint",          "eslint",     "flake8",    "ruff",
                                       "pylint",        "clang-tidy", "linter",    "clippy",
                                       "golangci-lint", "rubocop",    "shellcheck"};
    static const char *const tests[] = {"test", "tests",  "pytest",   "ctest",
                                        "jest", "vitest", "unittest", "ci"};
    static const char *const types[] = {"tsc", "mypy", "pyright", "typecheck"};
    static const char *const build[] = {"build", "make", "cmake", "cargo"};
    const char *w = st->low + t->s;

    if (in_words(lint, REIN_ARRAY_SIZE(lint), w, t->n))
        return Z_LINT;
    if (in_words(tests, REIN_ARRAY_SIZE(tests), w, t->n))
        return Z_TEST;
    if (in_words(types, REIN_ARRAY_SIZE(types), w, t->n))
        return Z_TYPES;
    if (in_words(build, REIN_ARRAY_SIZE(build), w, t->n))
        return Z_BUILD;
    return 0;
}

static void cjk_items(struct zh *z, size_t ti)
{
    const struct rein__sent *st = z->st;
    const struct rein__tok *t = &st->t[ti];
    const char *s = st->s;
    size_t i = t->s, end = t->s + t->n;

    while (i < end) {
        size_t tl = 0, ll = 0;
        int tool = rein__claims_vocab_cjk(st->vocab, s, end, i, &tl);
        uint32_t cat = lookup(s, end, i, &ll);
        if (tool >= 0 && tl >= ll) {
            add(z, ZI_TOOL, (uint32_t)i, (uint32_t)(i + tl), 0, tool, ti);
            i += tl;
        } else if (ll) {
            if (cat)
                add(z, ZI_LEX, (uint32_t)i, (uint32_t)(i + ll), cat, -1, ti);
            i += ll;
        } else {
            i += rein__claims_utf8_len(s, end, i);
        }
    }
}

static void items(struct zh *z)
{
    const struct rein__sent *st = z->st;

    for (size_t i = 0; i < st->nt; i++) {
        const struct rein__tok *t = &st->t[i];
        uint32_t a = t->s, b = t->s + t->n, c;
        switch (t->type) {
        case TK_CJK:
            cjk_items(z, i);
            break;
        case TK_PATH:
            add(z, ZI_PATH, a, b, 0, -1, i);
            break;
        case TK_PUNCT:
            if (t->punct == P_CJK_ENUM)
                add(z, ZI_ENUM, a, b, 0, -1, i);
            else if (t->punct == ',' || t->punct == ';' || t->punct == ':' ||
                     t->punct == P_CJK_COMMA || t->punct == P_CJK_SEMI || t->punct == P_CJK_COLON ||
                     t->punct == '!' || t->punct == '?' || t->punct == '.' || t->punct == P_DASH)
                add(z, ZI_STOP, a, b, 0, -1, i);
            break;
        case TK_NUM:
        case TK_QUOTE:
            add(z, ZI_VALUE, a, b, 0, -1, i);
            break;
        default:
            if (t->tool != -1) {
                size_t last = i + (t->tool_len ? t->tool_len : 1) - 1;
                add(z, ZI_TOOL, a, st->t[last].s + st->t[last].n, 0, t->tool, i);
                i = last;
            } else if ((t->type == TK_WORD || t->type == TK_CODE) &&
                       (t->flags & (TF_IDENT | TF_CALL))) {
                add(z, ZI_NAME, a, b, 0, -1, i);
            } else if (t->type == TK_WORD && (c = ascii_check_word(st, t)) != 0) {
                add(z, ZI_LEX, a, b, c, -1, i);
            } else if (t->type == TK_WORD || t->type == TK_CODE) {
                add(z, ZI_WORD, a, b, 0, -1, i);
            }
            break;
        }
    }
}

/* ---- reading the items ---- */

static bool cat(const struct zh *z, size_t i, uint32_t c)
{
    return i < z->n && z->it[i].type == ZI_LEX && (z->it[i].cat & c);
}

/* Nothing but blanks between items a and b. */
static bool adjacent(const struct zh *z, size_t a, size_t b)
{
    if (a >= z->n || b >= z->n || z->it[a].end > z->it[b].pos)
        return false;
    for (uint32_t k = z->it[a].end; k < z->it[b].pos; k++) {
        if (z->st->s[k] != ' ' && z->st->s[k] != '\t')
            return false;
    }
    return true;
}

static bool is_verb_item(const struct zh *z, size_t i)
{
    return cat(z, i, Z_USE | Z_RES | Z_SAY | Z_WRITE | Z_DEL | Z_FN | Z_PASS | Z_VIA);
}

/*
 * Resolves the words whose reading depends on the next one: 将 before a noun marks the
 * object (我已将结果写入…) rather than the future; 要 is a future only before a verb or
 * 把/将/先/再/去; 过 is experiential only right after a verb; 用 is "use" only before a tool;
 * 通过 is "via" before a tool and "passed" otherwise.
 */
static void disambiguate(struct zh *z)
{
    for (size_t i = 0; i < z->n; i++) {
        struct item *it = &z->it[i];
        const char *w = z->st->s + it->pos;
        size_t wl = it->end - it->pos;
        if (it->type != ZI_LEX)
            continue;
        if (wl == 3 && (memcmp(w, "将", 3) == 0 || memcmp(w, "將", 3) == 0)) {
            /* 已将 is always the object marker */
            bool fut = i + 1 < z->n && adjacent(z, i, i + 1) &&
                       (is_verb_item(z, i + 1) || cat(z, i + 1, Z_FUT | Z_BA | Z_RESC)) &&
                       !(i > 0 && adjacent(z, i - 1, i) && cat(z, i - 1, Z_PERF));
            it->cat = fut ? Z_FUT : Z_BA;
        } else if (wl == 3 && memcmp(w, "要", 3) == 0) {
            bool fut = i + 1 < z->n && (is_verb_item(z, i + 1) || cat(z, i + 1, Z_BA | Z_FUT));
            if (!fut && i + 1 < z->n && z->it[i + 1].type == ZI_LEX) {
                const char *nx = z->st->s + z->it[i + 1].pos;
                fut = strncmp(nx, "先", 3) == 0 || strncmp(nx, "再", 3) == 0 ||
                      strncmp(nx, "去", 3) == 0;
            }
            it->cat = fut ? Z_FUT : 0;
        } else if ((wl == 3 && (memcmp(w, "让", 3) == 0 || memcmp(w, "讓", 3) == 0)) &&
                   i + 1 < z->n && z->it[i + 1].type == ZI_TOOL) {
            it->cat = Z_USE; /* 让 calculator 算: the tool did it */
        } else if (it->cat & Z_GUO) {
            it->cat = i > 0 && adjacent(z, i - 1, i) && is_verb_item(z, i - 1) ? Z_PERF : 0;
        } else if ((it->cat & Z_VIA) && (it->cat & Z_USE) && wl == 3) {
            /* 用: only before a tool (用了 X, 用过 X) */
            size_t k = i + 1;
            while (k < z->n && k < i + 3 && cat(z, k, Z_PERF | Z_GUO))
                k++;
            if (!(k < z->n && z->it[k].type == ZI_TOOL))
                it->cat = 0;
        } else if ((it->cat & Z_SAY) && (wl == 3 || wl == 6) &&
                   (memcmp(w, "说", 3) == 0 || memcmp(w, "說", 3) == 0 ||
                    (wl == 6 && (memcmp(w, "表示", 6) == 0 || memcmp(w, "告诉", 6) == 0 ||
                                 memcmp(w, "告訴", 6) == 0))) &&
                   !(i > 0 && (z->it[i - 1].type == ZI_TOOL || cat(z, i - 1, Z_RESN)))) {
            /* 上一个助手说…: a person's word, not a tool's output */
            it->cat = Z_HEDGE;
        } else if ((it->cat & Z_VIA) && (it->cat & Z_PASS)) {
            it->cat = i + 1 < z->n && z->it[i + 1].type == ZI_TOOL ? Z_VIA : Z_PASS;
        } else if ((it->cat & Z_RESC) && !(it->cat & (Z_WRITE)) && wl == 3) {
            /* 到 入 为 在 成 alone: a complement only right after a write verb */
            it->cat = i > 0 && adjacent(z, i - 1, i) && cat(z, i - 1, Z_WRITE | Z_DEL | Z_RES)
                          ? Z_RESC
                          : 0;
        }
    }
}

static void clauses(struct zh *z)
{
    uint16_t c = 0;

    for (size_t i = 0; i < z->n; i++) {
        if (z->it[i].type == ZI_STOP || cat(z, i, Z_CONJ))
            c++;
        z->clause[i] = c;
        /* 后 and 之后 make a time clause at its end (调用 X 后，…) or right after a call of a
         * tool (调用 X 后得到…); 清洗后的数据 is not one */
        if (cat(z, i, Z_TIME) && !(i + 1 == z->n || z->it[i + 1].type == ZI_STOP)) {
            size_t u = i >= 3 && cat(z, i - 2, Z_PERF) ? i - 3 : i >= 2 ? i - 2 : i;
            if (u < i && z->it[i - 1].type == ZI_TOOL && cat(z, u, Z_USE | Z_VIA))
                c++;
            else
                z->it[i].cat &= ~Z_TIME;
        }
    }
}

static size_t cstart(const struct zh *z, size_t i)
{
    if (i >= z->n || i >= ITEMS_MAX)
        return i;
    while (i > 0 && z->clause[i - 1] == z->clause[i])
        i--;
    return i;
}

static size_t cend(const struct zh *z, size_t i)
{
    uint16_t c = z->clause[i];

    while (i < z->n && z->clause[i] == c)
        i++;
    return i;
}

/* Markers anywhere in the clause of i. */
static uint32_t clause_cats(const struct zh *z, size_t i)
{
    uint32_t c = 0;

    for (size_t k = cstart(z, i), e = cend(z, i); k < e; k++) {
        if (z->it[k].type == ZI_LEX)
            c |= z->it[k].cat;
    }
    return c;
}

/* Markers in the clause of i before it. */
static uint32_t before(const struct zh *z, size_t i)
{
    uint32_t c = 0;

    for (size_t k = cstart(z, i); k < i; k++) {
        if (z->it[k].type == ZI_LEX)
            c |= z->it[k].cat;
    }
    return c;
}

/* Gated: the clause is a question, a condition or a time clause, or what comes before i
 * negates it, puts it in the future, makes it a modal, a hedge or an imperative. */
static bool gated_at(const struct zh *z, size_t i, uint32_t skip)
{
    uint32_t all = clause_cats(z, i), pre = before(z, i) & ~skip;

    if (z->question || (all & (Z_COND | Z_TIME | Z_Q)))
        return true;
    return (pre & (Z_NEG | Z_FUT | Z_MODAL | Z_HEDGE | Z_IMP)) != 0;
}

/* A realis marker in the clause of i (after a verb, or 已 before it). */
static bool done_in_clause(const struct zh *z, size_t i)
{
    return (clause_cats(z, i) & Z_PERF) != 0;
}

/* A later clause of the sentence that is realis and not gated. */
static bool done_later(const struct zh *z, size_t i)
{
    size_t e = cend(z, i);

    for (size_t k = e; k < z->n; k++) {
        if (z->it[k].type == ZI_LEX &&
            (z->it[k].cat & (Z_FUT | Z_MODAL | Z_NEG | Z_COND | Z_FAIL)) && !(z->it[k].cat & Z_NO))
            return false;
        if (z->it[k].type == ZI_LEX && (z->it[k].cat & (Z_PERF | Z_SAY)))
            return true;
        if (z->it[k].type == ZI_LEX && (z->it[k].cat & Z_RES) && k + 1 < z->n &&
            z->it[k + 1].type == ZI_VALUE)
            return true;
    }
    return false;
}

/* A result stated in words after 是/为 ("结果是官方更新日志"): at least one more character
 * before the clause ends. */
static bool stated_after(const struct zh *z, size_t i)
{
    size_t e = cend(z, i);
    size_t from = z->it[i].end, to = e < z->n ? z->it[e].pos : z->st->n;
    const char *s = z->st->s + from;

    if (to < from + 6)
        return false;
    return memcmp(s, "是", 3) == 0 || memcmp(s, "为", 3) == 0 || memcmp(s, "為", 3) == 0;
}

/* A concrete value in the clause after i: a number, a quote, a path, a word. */
static bool value_after(const struct zh *z, size_t i)
{
    for (size_t k = i + 1, e = cend(z, i); k < e; k++) {
        if (z->it[k].type == ZI_VALUE || z->it[k].type == ZI_PATH || z->it[k].type == ZI_WORD ||
            z->it[k].type == ZI_NAME)
            return true;
    }
    return false;
}

static void emit_item(struct zh *z, enum rein_claim_kind kind, size_t subj, size_t path,
                      size_t name)
{
    struct rein__found f;
    const char *s = z->st->s;

    if (!z->ok)
        return;
    memset(&f, 0, sizeof(f));
    f.kind = kind;
    if (subj < z->n) {
        f.subject = s + z->it[subj].pos;
        f.subject_len = z->it[subj].end - z->it[subj].pos;
        if (kind == REIN_CLAIM_TOOL)
            f.tool = rein__claims_vocab_name(z->st->vocab, z->it[subj].tool);
    }
    if (path < z->n) {
        f.path = s + z->it[path].pos;
        f.path_len = z->it[path].end - z->it[path].pos;
        f.line = z->st->t[z->it[path].tok].line;
        if (kind != REIN_CLAIM_FUNCTION) {
            f.subject = f.path;
            f.subject_len = f.path_len;
        }
    }
    if (name < z->n) {
        f.name = s + z->it[name].pos;
        f.name_len = z->it[name].end - z->it[name].pos;
        f.subject = f.name;
        f.subject_len = f.name_len;
    }
    z->ok = z->emit(z->ud, z->st, &f);
}

static void emit_check(struct zh *z, enum rein_claim_kind kind, const char *what)
{
    struct rein__found f;

    if (!z->ok)
        return;
    memset(&f, 0, sizeof(f));
    f.kind = kind;
    f.subject = what;
    f.subject_len = strlen(what);
    z->ok = z->emit(z->ud, z->st, &f);
}

/* ---- tools ---- */

static bool tool_claim(struct zh *z, size_t m)
{
    size_t p = m, e = cend(z, m);

    /* before the mention: 调用(了), 用, 经, 通过, 根据 */
    while (p > cstart(z, m) && z->it[p - 1].type == ZI_LEX && (z->it[p - 1].cat & Z_PERF) &&
           adjacent(z, p - 1, p))
        p--;
    if (p > cstart(z, m) && cat(z, p - 1, Z_FRAME))
        return !gated_at(z, p - 1, 0);
    if (p > cstart(z, m) && cat(z, p - 1, Z_USE | Z_VIA)) {
        size_t u = p - 1;
        /* "调用 X 后，得到了…": the time clause happened when the next clause did */
        if ((clause_cats(z, u) & Z_TIME) && !(clause_cats(z, u) & (Z_COND | Z_Q)) &&
            !(before(z, u) & (Z_NEG | Z_FUT | Z_MODAL | Z_HEDGE | Z_IMP)) && !z->question)
            return done_later(z, m);
        if (gated_at(z, u, 0))
            return false;
        /* "调用 X 的结果": the result of the call */
        if (m + 1 < z->n && cat(z, m + 1, Z_RESN))
            return true;
        /* "调用 calculator 计算：2+2=4": a result given after the colon */
        {
            size_t e2 = cend(z, m);
            if ((clause_cats(z, m) & (Z_RES | Z_SAY)) && e2 + 1 < z->n &&
                z->it[e2].type == ZI_STOP && z->it[e2 + 1].type == ZI_VALUE &&
                (z->st->t[z->it[e2].tok].punct == ':' ||
                 z->st->t[z->it[e2].tok].punct == P_CJK_COLON))
                return true;
        }
        if (done_in_clause(z, m) || cat(z, u, Z_VIA) || done_later(z, m)) {
            if (cat(z, u, Z_VIA) && !done_in_clause(z, m) && !done_later(z, m) &&
                !(clause_cats(z, m) & (Z_RES | Z_SAY)))
                return false;
            return true;
        }
        return false;
    }
    /* the mention as subject: X 返回 2, X 显示…, X 的输出是…, X 已…了 */
    for (size_t k = m + 1; k < e; k++) {
        const struct item *it = &z->it[k];
        if (it->type != ZI_LEX)
            continue;
        if (it->cat & Z_FAIL)
            return false;
        if (it->cat & (Z_NEG | Z_FUT | Z_MODAL | Z_HEDGE | Z_COND | Z_Q | Z_TIME))
            return false;
        if (gated_at(z, m, 0))
            return false;
        if (it->cat & (Z_PERF | Z_SAY))
            return true;
        if ((it->cat & (Z_RES | Z_RESN)) && value_after(z, k))
            return true;
        if ((it->cat & Z_RESN) && stated_after(z, k))
            return true;
    }
    return false;
}

/* ---- files and functions ---- */

static size_t nearest_path(const struct zh *z, size_t v, bool whole_sentence)
{
    size_t a = whole_sentence ? 0 : cstart(z, v), e = whole_sentence ? z->n : cend(z, v);
    size_t best = SIZE_MAX, bd = SIZE_MAX;

    for (size_t k = a; k < e; k++) {
        size_t d;
        if (z->it[k].type != ZI_PATH)
            continue;
        d = k > v ? k - v : (v - k) + 1; /* after the verb wins a tie */
        if (d < bd) {
            bd = d;
            best = k;
        }
    }
    return best;
}

static size_t function_name(const struct zh *z, size_t v)
{
    for (size_t k = cstart(z, v), e = cend(z, v); k < e; k++) {
        if (z->it[k].type == ZI_NAME)
            return k;
        if (z->it[k].type == ZI_WORD &&
            ((k + 1 < e && cat(z, k + 1, Z_FNN)) || (k > 0 && cat(z, k - 1, Z_FNN))))
            return k;
    }
    return SIZE_MAX;
}

static void file_claims(struct zh *z, size_t v)
{
    uint32_t c = z->it[v].cat;
    uint32_t all = clause_cats(z, v);
    bool done = (all & Z_PERF) != 0, fn_noun = (all & Z_FNN) != 0;
    size_t path, name;

    if (gated_at(z, v, 0) || (all & Z_FAIL))
        return;
    if (!done) {
        /* 我把均值保存在 stats/mean.txt 中: a first person and a resultative complement */
        bool resc =
            (c & Z_RESC) || (v + 1 < z->n && adjacent(z, v, v + 1) && cat(z, v + 1, Z_RESC));
        /* "图表保存在 plots/revenue.png": putting something somewhere says where it is now
         * (what usually happens, 默认 or 每次, is a hedge and gated above) */
        bool put = resc && (c & Z_WRITE) && !(c & Z_FN);
        if (!(resc && ((before(z, v) & Z_I) || put)))
            return;
    }
    name = (c & Z_FN) ? function_name(z, v) : SIZE_MAX;
    if (name != SIZE_MAX && (fn_noun || z->it[name].type == ZI_NAME)) {
        emit_item(z, REIN_CLAIM_FUNCTION, SIZE_MAX, nearest_path(z, v, true), name);
        return;
    }
    if (!(c & (Z_WRITE | Z_DEL)))
        return;
    path = nearest_path(z, v, false);
    /* "文件已保存：reports/weekly.md": the path after the colon */
    if (path == SIZE_MAX) {
        size_t e = cend(z, v);
        if (e < z->n && z->it[e].type == ZI_STOP &&
            (z->st->t[z->it[e].tok].punct == ':' || z->st->t[z->it[e].tok].punct == P_CJK_COLON) &&
            e + 1 < z->n && z->it[e + 1].type == ZI_PATH)
            path = e + 1;
    }
    if (path == SIZE_MAX)
        return;
    emit_item(z, (c & Z_DEL) ? REIN_CLAIM_FILE_DELETED : REIN_CLAIM_FILE_WRITTEN, SIZE_MAX, path,
              SIZE_MAX);
}

/* ---- checks ---- */

static enum rein_claim_kind check_kind(uint32_t c)
{
    return (c & Z_TYPES)   ? REIN_CLAIM_NO_TYPE_ERRORS
           : (c & Z_LINT)  ? REIN_CLAIM_LINT_CLEAN
           : (c & Z_BUILD) ? REIN_CLAIM_BUILD_PASSES
                           : REIN_CLAIM_TESTS_PASS;
}

static const char *check_name(enum rein_claim_kind k)
{
    return k == REIN_CLAIM_NO_TYPE_ERRORS ? "types"
           : k == REIN_CLAIM_LINT_CLEAN   ? "lint"
           : k == REIN_CLAIM_BUILD_PASSES ? "build"
                                          : "tests";
}

static void check_claims(struct zh *z, size_t i)
{
    const uint32_t subjects = Z_TEST | Z_BUILD | Z_LINT | Z_TYPES;
    size_t e = cend(z, i);

    /* 没有类型错误, 无 lint 警告: an all-clear */
    if (cat(z, i, Z_NO)) {
        uint32_t seen = 0;
        for (size_t k = i + 1; k < e && k < i + 4; k++) {
            if (z->it[k].type == ZI_LEX)
                seen |= z->it[k].cat;
            if (cat(z, k, Z_ERRN) && (seen & (Z_TYPES | Z_LINT))) {
                if (!gated_at(z, i, 0))
                    emit_check(z, check_kind(seen), check_name(check_kind(seen)));
                return;
            }
        }
        return;
    }
    /* 成功构建, 顺利编译 */
    if (cat(z, i, Z_PASS) && i + 1 < e && cat(z, i + 1, Z_BUILD) && !gated_at(z, i, 0)) {
        emit_check(z, REIN_CLAIM_BUILD_PASSES, "build");
        return;
    }
    if (!cat(z, i, subjects))
        return;
    /* "我跑了一遍测试，212 个全部通过", "…，全部通过": the pass in the next clause, when
     * that clause names no other check */
    if (e + 1 < z->n && z->it[e].type == ZI_STOP &&
        (z->st->t[z->it[e].tok].punct == ',' || z->st->t[z->it[e].tok].punct == P_CJK_COMMA) &&
        !(clause_cats(z, e + 1) & subjects))
        e = cend(z, e + 1);
    for (size_t k = i + 1; k < e && k < i + 8; k++) {
        if (z->it[k].type != ZI_LEX)
            continue;
        /* 没有报错, 无错误, 没有发现任何问题: an all-clear */
        if (z->it[k].cat & Z_NO) {
            for (size_t j = k + 1; j < e && j < k + 4; j++) {
                if (cat(z, j, Z_ERRN)) {
                    if (!gated_at(z, k, 0))
                        emit_check(z, check_kind(z->it[i].cat),
                                   check_name(check_kind(z->it[i].cat)));
                    return;
                }
                if (z->it[j].type == ZI_LEX && !(z->it[j].cat & (Z_RES | Z_SAY)))
                    break;
            }
        }
        if (z->it[k].cat & (Z_FAIL | Z_NEG | Z_FUT | Z_MODAL | Z_HEDGE))
            return;
        if (z->it[k].cat & Z_PASS) {
            uint32_t c = z->it[i].cat;
            /* "lint 检查": the ASCII word names the check */
            if (!gated_at(z, k, Z_NO))
                emit_check(z, check_kind(c), check_name(check_kind(c)));
            return;
        }
    }
}

bool rein__claims_chinese(struct rein__sent *st, rein__emit_fn fn, void *ud)
{
    struct zh *z = rein_malloc(sizeof(*z));
    bool ok;

    pthread_once(&once, build);
    if (!z)
        return false;
    z->st = st;
    z->n = 0;
    z->emit = fn;
    z->ud = ud;
    z->ok = true;
    items(z);
    disambiguate(z);
    clauses(z);
    z->question = st->question;
    /* a final 吗/呢 asks about the whole sentence */
    for (size_t i = z->n; i-- > 0;) {
        if (z->it[i].type == ZI_STOP)
            continue;
        if (cat(z, i, Z_Q) && z->it[i].end - z->it[i].pos == 3)
            z->question = true;
        break;
    }
    for (size_t i = 0; i < z->n && z->ok; i++) {
        const struct item *it = &z->it[i];
        if (it->type == ZI_TOOL && tool_claim(z, i))
            emit_item(z, REIN_CLAIM_TOOL, i, SIZE_MAX, SIZE_MAX);
        if (it->type == ZI_LEX && (it->cat & (Z_WRITE | Z_DEL | Z_FN)))
            file_claims(z, i);
        if (it->type == ZI_LEX && (it->cat & (Z_TEST | Z_BUILD | Z_LINT | Z_TYPES | Z_NO | Z_PASS)))
            check_claims(z, i);
    }
    ok = z->ok;
    rein_free(z);
    return ok;
}
